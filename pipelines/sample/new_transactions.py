"""The new transactions of January and February 2026: the queries of the bundled sample.

Each was written by hand to exercise one thing a categorisation retriever meets in real books. The
category is the label-time-only field: the bookkeeper's final decision, known when the pair is
graded, never given to the retriever.

(query_id, date, supplier, description, amount, currency, vat, category, what it exercises)
"""

from catalogue import E, O, R, RC, S, Z

NEW_TRANSACTIONS = [
    ("q01", "2026-01-05", "Paperline Stationers Ltd", "A4 copier paper 80gsm, 5 ream box", 23.99, "GBP", S, "Office supplies", "easy: regular supplier and item"),
    ("q02", "2026-01-06", "AMZN Mktp UK", "HP 305XL black ink cartridge", 24.49, "GBP", S, "Office supplies", "marketplace that sells many categories"),
    ("q03", "2026-01-07", "Amazon.co.uk", "LG 27in 4K UHD monitor", 279.99, "GBP", S, "Equipment", "marketplace; brand not seen before"),
    ("q04", "2026-01-08", "Amazon", "Book - Don't Make Me Think (paperback)", 19.99, "GBP", Z, "Training", "marketplace; zero-rated book"),
    ("q05", "2026-01-09", "AMZN Mktp UK", "Nespresso compatible coffee pods x100", 22.50, "GBP", S, "Staff welfare", "marketplace; kitchen supplies"),
    ("q06", "2026-01-09", "TESCO STORES 3217", "milk, teabags, sugar - office", 8.65, "GBP", Z, "Staff welfare", "supermarket: kitchen supplies"),
    ("q07", "2026-01-12", "Tesco Stores", "sandwich platter + soft drinks for client workshop", 46.20, "GBP", S, "Meals & entertainment", "supermarket: client hospitality, not kitchen supplies"),
    ("q08", "2026-01-12", "TESCO PFS", "Unleaded 38.4L", 54.10, "GBP", S, "Fuel", "same retailer, fuel station"),
    ("q09", "2026-01-13", "Trainline", "Bristol TM - London Paddington return (client mtg)", 132.60, "GBP", Z, "Travel", "zero-rated rail fare"),
    ("q10", "2026-01-14", "UBER *TRIP", "Taxi Temple Meads to office", 14.80, "GBP", S, "Travel", "standard-rated taxi (VAT differs from rail)"),
    ("q11", "2026-01-15", "UBER *EATS", "Team lunch during sprint planning", 63.40, "GBP", S, "Staff welfare", "same platform as taxis; team food, not client"),
    ("q12", "2026-01-16", "Shell", "coffee & sandwich while on client visit", 7.85, "GBP", S, "Meals & entertainment", "fuel station, but food"),
    ("q13", "2026-02-03", "BT Business", "Business fibre broadband - Feb 26", 42.00, "GBP", S, "Telephone & internet", "monthly bill"),
    ("q14", "2026-02-09", "Severnside Energy", "Electricity 01/01/26-31/01/26", 96.40, "GBP", R, "Utilities", "reduced-rate energy"),
    ("q15", "2026-01-02", "Millbrook Property Management", "Office rent Q1 2026 (Jan-Mar)", 3150.00, "GBP", E, "Rent & rates", "quarterly rent, new amount"),
    ("q16", "2026-01-30", "Hartwell & Co Chartered Accountants", "Year end accounts & CT600 prep", 1380.00, "GBP", S, "Professional fees", "abbreviation of a known annual fee"),
    ("q17", "2026-01-20", "Ashdown Commercial Law", "Review of NDA and master services agreement", 650.00, "GBP", S, "Professional fees", "new supplier; history has a different law firm"),
    ("q18", "2026-01-06", "Adobe", "Creative Cloud All Apps - 3 seats monthly", 202.26, "GBP", S, "Software subscriptions", "monthly subscription"),
    ("q19", "2026-01-12", "Tasklane Inc", "Team plan monthly subscription", 96.00, "USD", RC, "Software subscriptions", "overseas SaaS, reverse charge, USD"),
    ("q20", "2026-01-28", "Google", "Google Ads - January campaign", 250.00, "GBP", RC, "Marketing", "Google: ads vs Workspace"),
    ("q21", "2026-02-01", "Google", "Workspace Business Starter x4 users", 27.60, "GBP", S, "Software subscriptions", "Google: Workspace vs ads"),
    ("q22", "2026-01-19", "Royal Mail", "1st class stamps x100", 135.00, "GBP", E, "Postage", "exempt stamps"),
    ("q23", "2026-01-21", "Screwfix", "Door closer + screws for fire door", 38.97, "GBP", S, "Repairs & maintenance", "trade counter, small repair parts"),
    ("q24", "2026-02-11", "J Hartley Plumbing", "Fix leaking kitchen tap & replace washer", 85.00, "GBP", O, "Repairs & maintenance", "new supplier, not VAT registered"),
    ("q25", "2026-02-02", "Kestrel Insurance Brokers", "Professional indemnity renewal 2026", 864.00, "GBP", E, "Insurance", "annual renewal, early this year"),
    ("q26", "2026-01-22", "Northgate Bank", "Intl payment charge", 15.00, "GBP", E, "Bank charges", "abbreviation"),
    ("q27", "2026-02-02", "Stripe", "Processing fees Jan", 37.12, "GBP", E, "Bank charges", "monthly fee, short description"),
    ("q28", "2026-01-26", "SkillForge Online", "Advanced Excel for finance - online course", 89.00, "GBP", S, "Training", "online course"),
    ("q29", "2026-01-27", "Vistaprint", "Business cards x500, matt", 34.99, "GBP", S, "Marketing", "printer: marketing material"),
    ("q30", "2026-02-04", "Vistaprint", "Letterheaded paper 250 sheets", 48.00, "GBP", S, "Office supplies", "printer: stationery, not marketing"),
    ("q31", "2026-02-05", "LinkedIn Ireland", "LinkedIn Learning annual licence", 299.88, "GBP", RC, "Training", "LinkedIn is mostly ads; this is training"),
    ("q32", "2026-02-10", "Premier Inn", "1 night Manchester Piccadilly - conference", 89.00, "GBP", S, "Travel", "hotel stay"),
    ("q33", "2026-02-12", "The Lantern Bistro", "Client dinner x3", 142.50, "GBP", S, "Meals & entertainment", "new restaurant"),
    ("q34", "2026-02-13", "Vodafone", "iPhone 15 handset - new starter", 699.00, "GBP", S, "Equipment", "phone network is mostly the monthly bill; this is hardware"),
    ("q35", "2026-02-16", "Paperline Stationers", "stationary - envelops C5 & biros", 18.40, "GBP", S, "Office supplies", "typos in the description"),
    ("q36", "2026-02-17", "Currys", "Team Knowhow laptop screen repair", 149.00, "GBP", S, "Repairs & maintenance", "electronics shop, but a repair"),
    ("q37", "2026-01-31", "HMRC", "Corporation tax payment y/e 31/03/25", 4820.00, "GBP", O, "Corporation tax", "no answer: nothing like it in the ledger"),
    ("q38", "2026-02-18", "Bristol Food Bank", "Charity donation - winter appeal", 250.00, "GBP", O, "Donations", "no answer: nothing like it in the ledger"),
    ("q39", "2026-02-19", "Dell Technologies", "Latitude 5450 laptop 16GB RAM", 1049.00, "GBP", S, "Equipment", "new supplier, familiar kind of purchase"),
    ("q40", "2026-02-20", "Bristol City Council", "Pay & display parking - Queen Sq", 6.80, "GBP", O, "Travel", "council: parking, not business rates"),
    ("q41", "2026-02-23", "Apple Store", "MacBook Pro battery replacement", 229.00, "GBP", S, "Repairs & maintenance", "hardware shop, but a repair"),
]
