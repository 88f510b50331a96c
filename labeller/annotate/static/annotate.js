// labeller annotate: the grading page. Every grade is sent to the server the moment it is given;
// the page keeps nothing the server does not have, so a closed tab or a reload resumes where it stopped.
"use strict";

const $ = (id) => document.getElementById(id);
const OUTCOME_TEXT = { graded: "graded", cant_judge: "can't judge", later: "later" };
let session = null, items = [], index = 0, pending = null, annotator = null, saving = false;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function banner(message, stale) {
  const box = $("banner");
  box.replaceChildren(message);
  if (stale) box.append(el("button", { type: "button", onclick: () => location.reload() }, "Reload"));
  box.hidden = !message;
}

async function api(path, body) {
  const options = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ sample_id: session && session.sample_id, ...body }) };
  let response;
  try { response = await fetch(path, options); } catch (e) {
    banner("The annotation server cannot be reached. Your saved grades are safe; restart it and reload.");
    throw e;
  }
  const data = await response.json();
  if (!response.ok) { banner(data.error, data.stale); throw new Error(data.error); }
  return data;
}

function storageKey() { return "labeller-annotator:" + session.sample_id; }

async function start() {
  session = await api("/api/session");
  $("warnings").replaceChildren(...session.warnings.map((w) => el("div", { class: "warning" }, w)));
  annotator = localStorage.getItem(storageKey());
  if (annotator && !session.annotators.includes(annotator)) annotator = null;
  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", onKey);
  buildStatic();
  await route();
}

function buildStatic() {
  $("rubric-name").textContent = session.rubric.name;
  $("rubric-body").textContent = session.rubric.body;
  const defs = Object.entries(session.rubric.grades).sort((a, b) => b[0] - a[0]);
  $("grade-defs").replaceChildren(...(defs.length ? defs.map(([g, d]) => el("li", {}, el("b", {}, g),
    el("strong", {}, d.title), " ", d.text)) : [el("li", {}, "The rubric has no per-grade list; open the whole rubric below.")]));
  const short = Object.fromEntries(defs.map(([g, d]) => [g, d.title.replace(/[.]$/, "")]));
  $("grade-buttons").replaceChildren(...[1, 2, 3, 4, 5].map((g) =>
    el("button", { type: "button", "data-grade": g, onclick: () => chooseGrade(g) }, el("kbd", {}, g), " ", short[g] || "")));
  $("sample-info").textContent = `Sample ${session.sample_id} (${session.sample}): ${session.pairs} pairs, rubric `
    + `${session.rubric.name}, ${session.annotators.length} annotators, ${session.shared_pairs} pairs graded by two.`;
  $("names").replaceChildren(...session.annotators.map((name) =>
    el("button", { type: "button", onclick: () => identify(name) }, name)));
  $("btn-cant").onclick = () => saveOutcome("cant_judge");
  $("btn-later").onclick = () => saveOutcome("later");
  $("btn-prev").onclick = () => move(-1);
  $("btn-next").onclick = () => move(1);
  $("note").addEventListener("keydown", onNoteKey);
}

async function identify(name) {
  annotator = name;
  localStorage.setItem(storageKey(), name);
  if (location.hash === "#grade") await route(); else location.hash = "#grade";  // hashchange routes
}

async function route() {
  const view = (location.hash || "#grade").slice(1);
  for (const name of ["grade", "agreement", "adjudicate"]) $("tab-" + name).classList.toggle("active", name === view);
  for (const section of document.querySelectorAll("main > section")) section.hidden = true;
  $("who").replaceChildren(...(annotator ? [el("span", {}, "Grading as "), el("b", {}, annotator),
    el("button", { type: "button", onclick: switchPerson }, "switch")] : []));
  if (view === "agreement") { $("view-agreement").hidden = false; return showAgreement(); }
  if (view === "adjudicate") { $("view-adjudicate").hidden = false; return showAdjudication(); }
  if (!annotator) { $("view-identify").hidden = false; return; }
  items = (await api("/api/queue?annotator=" + encodeURIComponent(annotator))).items;
  const open = items.findIndex((i) => !i.mine);
  const later = items.findIndex((i) => i.mine && i.mine.outcome === "later");
  index = open >= 0 ? open : later >= 0 ? later : 0;  // resume: first pair not answered, then those left for later
  showItem();
  $("view-grade").hidden = false;  // only once filled, so what is visible is always the current pair
}

function switchPerson() {
  annotator = null;
  localStorage.removeItem(storageKey());
  if (location.hash === "#grade") route(); else location.hash = "#grade";
}

function fields(target, pairs) {
  target.replaceChildren(...pairs.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));
}

function showItem() {
  const item = items[index];
  pending = null;
  updateProgress();
  if (!item) { $("pair").hidden = true; return; }
  $("pair").hidden = false;
  $("query-id").textContent = item.query_id;
  $("doc-id").textContent = item.doc_id + " · pair " + (index + 1) + " of " + items.length;
  fields($("query-fields"), item.query);
  fields($("doc-fields"), item.doc);
  $("note").value = item.mine ? item.mine.note : "";
  const grade = item.mine && item.mine.outcome === "graded" ? item.mine.grade : null;
  for (const b of $("grade-buttons").children) b.classList.toggle("selected", Number(b.dataset.grade) === grade);
  $("btn-cant").classList.toggle("selected", !!item.mine && item.mine.outcome === "cant_judge");
  $("btn-later").classList.toggle("selected", !!item.mine && item.mine.outcome === "later");
  noteHint(false);
  const status = $("status");
  status.className = "";
  status.textContent = item.mine ? "your answer: " + (item.mine.outcome === "graded" ? "grade " + item.mine.grade
    : OUTCOME_TEXT[item.mine.outcome]) : "not graded yet";
}

function updateProgress() {
  const done = items.filter((i) => i.mine && i.mine.outcome !== "later").length;
  const later = items.filter((i) => i.mine && i.mine.outcome === "later").length;
  const cant = items.filter((i) => i.mine && i.mine.outcome === "cant_judge").length;
  $("bar-fill").style.width = (items.length ? (100 * done) / items.length : 0) + "%";
  $("progress-text").textContent = `${done} of ${items.length} done` + (later ? ` · ${later} later` : "")
    + (cant ? ` · ${cant} can't judge` : "");
  const message = $("done-message");
  message.hidden = !(items.length && done === items.length);
  message.textContent = "All your pairs are done. Thank you! You can still go back and change a grade.";
}

function noteHint(needed) {
  const required = session.note_required;
  $("note-hint").textContent = needed ? `grade ${pending} needs a note: type it, then press Enter`
    : required.length === 5 ? "(required for every grade)" : required.length ? `(required for grades ${required.join(", ")})` : "(optional)";
  $("note-hint").classList.toggle("needed", needed);
  $("note").classList.toggle("needed", needed);
}

function chooseGrade(grade) {
  if (!items[index]) return;
  pending = grade;
  for (const b of $("grade-buttons").children) b.classList.toggle("selected", Number(b.dataset.grade) === grade);
  if (session.note_required.includes(grade) && !$("note").value.trim()) {
    noteHint(true);
    $("note").focus();
    return;
  }
  save({ outcome: "graded", grade });
}

function saveOutcome(outcome) { if (items[index]) save({ outcome, grade: null }); }

async function save(answer) {
  if (saving) return;  // one save at a time: keys pressed meanwhile must not land on the next pair
  const item = items[index];
  const note = $("note").value.trim();
  saving = true;
  $("note").blur();
  $("note").readOnly = true;
  $("status").className = "";
  $("status").textContent = "saving…";
  try {
    await api("/api/grade", { annotator, query_id: item.query_id, doc_id: item.doc_id, note, ...answer });
  } catch (e) { $("status").textContent = "not saved"; return; } finally { saving = false; $("note").readOnly = false; }
  banner("");
  item.mine = { outcome: answer.outcome, grade: answer.grade, note };
  $("note").blur();
  if (index < items.length - 1) { index += 1; showItem(); } else { showItem(); }
  const status = $("status");
  status.className = "saved";
  status.textContent = `saved pair ${item.query_id} / ${item.doc_id}: `
    + (answer.outcome === "graded" ? "grade " + answer.grade : OUTCOME_TEXT[answer.outcome]);
}

function move(step) {
  if (saving) return;
  const next = index + step;
  if (next >= 0 && next < items.length) { index = next; showItem(); }
}

function onNoteKey(event) {
  if (event.key === "Escape") { event.preventDefault(); $("note").blur(); return; }
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    const item = items[index];
    const grade = pending || (item && item.mine && item.mine.outcome === "graded" ? item.mine.grade : null);
    if (grade) save({ outcome: "graded", grade });
  }
}

function onKey(event) {
  const typing = ["TEXTAREA", "INPUT"].includes(document.activeElement && document.activeElement.tagName);
  if (typing || event.ctrlKey || event.metaKey || event.altKey || $("view-grade").hidden) return;
  if (saving) { event.preventDefault(); return; }
  const key = event.key;
  if (/^[1-5]$/.test(key)) { event.preventDefault(); chooseGrade(Number(key)); }
  else if (key === "c") { event.preventDefault(); saveOutcome("cant_judge"); }
  else if (key === "l") { event.preventDefault(); saveOutcome("later"); }
  else if (key === "n") { event.preventDefault(); $("note").focus(); }
  else if (key === "ArrowLeft" || key === "p") { event.preventDefault(); move(-1); }
  else if (key === "ArrowRight") { event.preventDefault(); move(1); }
}

function fmt(value) { return value === null || value === undefined ? "undefined" : value.toFixed(3); }

function table(target, header, rows) {
  target.replaceChildren(el("tr", {}, ...header.map((h) => el("th", {}, h))),
    ...rows.map((r) => el("tr", {}, ...r.map((c) => (c instanceof Node ? el("td", {}, c)
      : el("td", typeof c === "number" ? { class: "num" } : {}, c))))));
}

async function showAgreement() {
  $("agreement-figures").replaceChildren(el("div", { class: "notice" }, "loading…"));
  const a = await api("/api/agreement");
  const figures = $("agreement-figures");
  if (a.enough) {
    figures.replaceChildren(...[["shared pairs", String(a.shared_pairs)], ["Cohen's kappa", fmt(a.kappa)],
      ["quadratic kappa", fmt(a.kappa_quadratic)], ["ordinal alpha", fmt(a.alpha_ordinal)],
      ["exact agreement", fmt(a.exact_agreement)]].map(([name, value]) =>
      el("div", { class: "figure" }, el("div", { class: "value" }, value), el("div", { class: "name" }, name))));
  } else {
    figures.replaceChildren(el("div", { class: "notice", id: "not-enough" },
      `Not enough overlap yet: ${a.shared_pairs} pairs graded by two or more people so far; kappa and alpha are shown `
      + `from ${a.min_shared} shared pairs on.`));
  }
  table($("progress-table"), ["annotator", "assigned", "graded", "can't judge", "later", "open"],
    a.progress.map((p) => [p.annotator, p.assigned, p.graded, p.cant_judge, p.later,
      p.assigned - p.graded - p.cant_judge - p.later]));
  const most = Math.max(1, ...a.distributions.flatMap((d) => Object.values(d.grades)));
  table($("distribution-table"), ["annotator", "1", "2", "3", "4", "5", "can't judge", "later"],
    a.distributions.map((d) => [d.annotator, ...[1, 2, 3, 4, 5].map((g) => {
      const n = d.grades[g] || 0;
      return el("span", {}, el("span", { class: "hbar", style: `width:${(60 * n) / most}px` }), String(n));
    }), d.cant_judge, d.later]));
  const box = $("disagreements");
  if (a.disagreements === null) {
    box.replaceChildren(el("div", { class: "notice" }, "Shown once the blind pass is finished, so that nobody sees "
      + "another person's grades while grading."));
  } else if (!a.disagreements.length) {
    box.replaceChildren(el("div", { class: "notice" }, "No disagreements on the shared pairs."));
  } else {
    const people = session.annotators;
    const t = el("table", { id: "disagreement-table" });
    table(t, ["#", "query", "document", ...people, "notes"], a.disagreements.map((p) => [p.position, p.query_id,
      p.doc_id, ...people.map((n) => (n in p.grades ? p.grades[n] : "")),
      Object.entries(p.notes).map(([n, text]) => `${n}: ${text || "(no note)"}`).join(" · ")]));
    box.replaceChildren(t, el("p", {}, el("a", { href: "#adjudicate" }, "Settle them in the adjudication view")));
  }
}

async function showAdjudication() {
  const name = $("adjudicator");
  name.value = name.value || localStorage.getItem("labeller-adjudicator") || "";
  name.onchange = () => localStorage.setItem("labeller-adjudicator", name.value.trim());
  const box = $("adjudication-items");
  box.replaceChildren(el("div", { class: "notice" }, "loading…"));
  const data = await api("/api/adjudication");
  if (!data.ready) {
    box.replaceChildren(el("div", { class: "notice" }, `Adjudication opens when the blind pass is finished: `
      + `${data.open_pairs} assigned pairs are still open (not graded, or marked later).`));
    return;
  }
  const note = data.warnings.map((w) => el("div", { class: "notice stale" }, w));
  if (!data.labels) note.push(el("div", { class: "notice" }, "No judge labels were given (serve with --labels): "
    + "only pairs people disagreed on are listed."));
  if (!data.items.length) note.push(el("div", { class: "notice" }, "Nothing to adjudicate: people and judge agree."));
  else {
    const settled = data.items.filter((i) => i.decision).length;
    note.push(el("p", { id: "adjudication-summary" }, `${data.items.length} pairs to look at, ${settled} settled so far.`));
  }
  box.replaceChildren(...note, ...data.items.map(adjudicationCard));
}

function adjudicationCard(item) {
  const dl = (pairs) => { const d = el("dl"); fields(d, pairs); return d; };
  const humans = item.humans.map((h) => el("div", {}, el("span", { class: "grade" }, `${h.annotator}: ${h.grade}`),
    " — ", h.note || "(no note)"));
  const judge = item.judge_grade === null ? "no judge label for this pair"
    : el("div", {}, el("span", { class: "grade" }, `judge: ${item.judge_grade}`), " — ", item.judge_justification);
  const grade = el("select", { "aria-label": "gold grade" }, ...[1, 2, 3, 4, 5].map((g) => el("option", { value: g }, g)));
  const decided = item.decision;
  grade.value = decided ? decided.grade : item.consensus;
  const text = el("input", { type: "text", placeholder: "why (kept for the record)", value: decided ? decided.note : "" });
  const flag = el("input", { type: "checkbox" });
  flag.checked = !!(decided && decided.rubric_problem);
  const state = el("span", { class: "settled" }, decided ? `settled by ${decided.annotator}: ${decided.grade}` : "");
  const saveButton = el("button", { type: "button", onclick: async () => {
    const who = $("adjudicator").value.trim();
    if (!who) { banner("Type your name as adjudicator first."); $("adjudicator").focus(); return; }
    localStorage.setItem("labeller-adjudicator", who);
    await api("/api/adjudicate", { adjudicator: who, query_id: item.query_id, doc_id: item.doc_id,
      grade: Number(grade.value), note: text.value, rubric_problem: flag.checked });
    banner("");
    state.textContent = `settled by ${who}: ${grade.value}`;
  } }, "Save");
  return el("div", { class: "item", "data-pair": item.query_id + "/" + item.doc_id },
    el("div", { class: "head" }, el("b", {}, `${item.query_id} / ${item.doc_id}`), el("span", {}, item.reason)),
    el("div", { class: "cols" }, el("div", {}, el("h2", {}, "Query"), dl(item.query)),
      el("div", {}, el("h2", {}, "Document"), dl(item.doc))),
    el("div", { class: "verdicts" }, el("div", { class: "verdict" }, el("h2", {}, "People"), ...humans,
      item.humans.length > 1 ? el("div", { class: "consensus" }, `consensus ${item.consensus} (the median; the lower `
        + "middle grade on a split)") : ""),
      el("div", { class: "verdict" }, el("h2", {}, "Judge"), judge)),
    el("div", { class: "decide" }, el("label", {}, "gold grade ", grade), text,
      el("label", {}, flag, " rubric problem"), saveButton, state));
}

start().catch((e) => console.error(e));
