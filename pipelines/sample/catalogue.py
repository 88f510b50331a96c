"""What the imaginary studio buys: suppliers, their line items, prices, VAT treatment and category.

The bundled sample describes the books of a small design studio in Bristol (UK, VAT registered).
Every name and description here was written for this sample. Some suppliers are real household
names, used only so the ledger reads like a real one; the prices and VAT treatments are invented
for the sample and are not statements about those companies.

item(descriptions, category, (low, high), vat, weight, alt=(other category, share), qty=[...]):
- Several descriptions for one item are variants a bookkeeper might have typed (abbreviations,
  typos), picked at random. Placeholders filled by make_sample.py: {n} the quantity, {mon} a month,
  {period} a date range, {q} a quarter, {long_route}/{short_route} a train journey, {city} a city, {year} a year.
- With `qty`, the price range is per unit and a quantity is drawn from `qty` (a description may
  or may not show it).
- `alt` makes the ledger as inconsistent as real books are: that share of the item's rows was
  filed under the other category.
"""

S, R, Z, E, O, RC = "standard 20%", "reduced 5%", "zero-rated", "exempt", "outside scope", "reverse charge"

CATEGORIES = [
    "Office supplies", "Equipment", "Software subscriptions", "Telephone & internet", "Utilities",
    "Rent & rates", "Travel", "Fuel", "Meals & entertainment", "Staff welfare", "Professional fees",
    "Insurance", "Bank charges", "Marketing", "Training", "Postage", "Repairs & maintenance",
]

CITIES = ["London", "Manchester", "Birmingham", "Cardiff", "Exeter", "Leeds", "Edinburgh", "Reading"]
LONG_ROUTES = [
    "Bristol TM - London Paddington rtn", "Bristol Parkway - Birmingham New St single",
    "Bristol Parkway - Manchester Picc rtn", "Bristol TM to Reading off-peak return",
    "Bristol Parkway - Leeds advance single", "Bristol TM - London Paddington anytime return",
]
SHORT_ROUTES = [
    "Bristol TM - Cardiff Central rtn", "Bristol TM - Exeter St Davids rtn", "Bristol Temple Meads - Bath Spa rtn",
    "Bristol TM - Swindon single",
]


def item(descs, category, price, vat, weight=1, alt=None, qty=None):
    return {"descs": descs, "category": category, "price": price, "vat": vat, "weight": weight,
            "alt": alt, "qty": qty}


# Suppliers bought from at random: (names as they appear on invoices and bank feeds, purchases per year, items)
SUPPLIERS = [
    (["Paperline Stationers Ltd", "Paperline Stationers"], 22, [
        item(["A4 copier paper 80gsm x{n} reams", "A4 paper 80gsm - {n} rms", "Copier paper A4 x{n} reams"], "Office supplies", (4.2, 5.5), S, 5, qty=[2, 5, 5, 10]),
        item(["Ballpoint pens black, box of 50", "Biros black x50", "Pens - blue & black, 2 boxes"], "Office supplies", (6.5, 14.0), S, 3),
        item(["C5 envelopes, box of 500", "Envelopes DL window x500", "envelops C5 500"], "Office supplies", (14.0, 26.0), S, 3),
        item(["Sticky notes 76x76 yellow x12", "Post-it notes assorted"], "Office supplies", (5.0, 11.0), S, 2),
        item(["Lever arch files x10", "Box files and dividers", "Ring binders A4 x10"], "Office supplies", (12.0, 28.0), S, 2),
        item(["Whiteboard markers & eraser", "Dry wipe markers assorted x8"], "Office supplies", (6.0, 12.5), S, 2),
        item(["HP 26A toner cartridge", "Toner - HP 26A black"], "Office supplies", (68.0, 89.0), S, 2),
        item(["Stationary order - pens, pads, tape", "General stationery restock", "stationary - misc"], "Office supplies", (18.0, 55.0), S, 3),
        item(["Desk organiser and letter trays", "Desk tidy set"], "Office supplies", (14.0, 32.0), S, 1, alt=("Equipment", 0.3)),
        item(["Laminating pouches A4 x100"], "Office supplies", (9.0, 15.0), S, 1),
    ]),
    (["Amazon.co.uk", "AMZN Mktp UK", "Amazon EU Sarl", "Amazon"], 70, [
        item(["HP 305 black ink cartridge", "HP 305XL ink - black & colour", "Ink cartridges for HP printer"], "Office supplies", (11.0, 38.0), S, 5),
        item(["Notebooks A5 ruled x{n}", "Hardback notebooks x{n}"], "Office supplies", (3.5, 9.0), S, 3, qty=[3, 5, 10]),
        item(["USB-C to USB-C cable 2m", "USB C charging cable x2", "HDMI cable 2m"], "Office supplies", (6.0, 15.0), S, 4, alt=("Equipment", 0.35)),
        item(["AA batteries 24 pack", "AAA batteries x20"], "Office supplies", (7.0, 13.0), S, 2),
        item(["Packing tape and bubble wrap", "Cardboard boxes for posting x10"], "Postage", (9.0, 24.0), S, 2, alt=("Office supplies", 0.4)),
        item(["27in 4K monitor", "Dell 27 inch monitor", "Monitor 24in IPS"], "Equipment", (139.0, 329.0), S, 4),
        item(["Wireless keyboard and mouse", "Logitech MX Keys keyboard", "Ergonomic mouse"], "Equipment", (29.0, 109.0), S, 4, alt=("Office supplies", 0.25)),
        item(["Laptop stand aluminium", "Monitor arm single", "Footrest for desk"], "Equipment", (22.0, 69.0), S, 3),
        item(["USB webcam 1080p", "Noise cancelling headset", "USB conference speakerphone"], "Equipment", (35.0, 149.0), S, 3),
        item(["Portable SSD 1TB", "External hard drive 2TB"], "Equipment", (59.0, 119.0), S, 2),
        item(["Extension lead 6 way surge protected", "4-way extension lead"], "Equipment", (12.0, 29.0), S, 2, alt=("Office supplies", 0.5)),
        item(["Book: design systems handbook", "Book - UX research methods", "Book on typography (hardback)", "Kindle book - pricing strategy"], "Training", (12.0, 38.0), Z, 3),
        item(["Coffee pods x{n}", "Nespresso compatible pods x{n}"], "Staff welfare", (0.22, 0.35), S, 2, qty=[50, 100, 100, 150]),
        item(["Ground coffee 1kg", "Tea bags 240 + coffee"], "Staff welfare", (9.0, 22.0), S, 1),
        item(["Kitchen roll & washing up liquid", "Dishwasher tablets x90", "Hand soap refills"], "Staff welfare", (8.0, 24.0), S, 2),
        item(["Desk plant and pot", "Office wall clock"], "Office supplies", (12.0, 35.0), S, 1, alt=("Equipment", 0.4)),
    ]),
    (["Tesco Stores", "TESCO STORES 3217"], 40, [
        item(["Milk, tea & coffee for office", "Office milk + teabags", "milk, sugar, teabags - office"], "Staff welfare", (4.0, 14.0), Z, 6),
        item(["Biscuits and fruit for office", "Snacks for team"], "Staff welfare", (5.0, 16.0), S, 3),
        item(["Cleaning products - kitchen", "Bin bags & antibacterial spray"], "Staff welfare", (6.0, 18.0), S, 2, alt=("Repairs & maintenance", 0.3)),
        item(["Sandwiches & drinks - client meeting", "Lunch platter for client workshop", "Client mtg refreshments"], "Meals & entertainment", (18.0, 55.0), S, 2),
        item(["Birthday cake & card for staff", "Leaving card and flowers"], "Staff welfare", (12.0, 35.0), S, 1),
        item(["A4 paper 1 ream (emergency)", "Printer paper 500 sheets"], "Office supplies", (4.5, 7.0), S, 1),
    ]),
    (["Sainsbury's", "SAINSBURYS S/MKTS"], 14, [
        item(["Office milk and fruit", "Tea, coffee, milk"], "Staff welfare", (5.0, 15.0), Z, 4),
        item(["Drinks & nibbles for client event", "Wine for client drinks"], "Meals & entertainment", (25.0, 80.0), S, 1),
        item(["Washing up liquid, sponges"], "Staff welfare", (3.0, 9.0), S, 1),
    ]),
    (["TESCO PFS", "Tesco Petrol"], 14, [
        item(["Unleaded {n}L", "Fuel - unleaded", "Petrol {n} litres"], "Fuel", (1.38, 1.52), S, 6, qty=[25, 32, 38, 41, 45, 50]),
        item(["Screenwash & de-icer", "Car wash"], "Repairs & maintenance", (5.0, 12.0), S, 1, alt=("Fuel", 0.5)),
    ]),
    (["Shell", "SHELL BRISTOL"], 12, [
        item(["Unleaded {n}L", "Fuel - unleaded", "Petrol"], "Fuel", (1.40, 1.56), S, 6, qty=[25, 30, 36, 42, 48]),
        item(["AdBlue 10L", "Engine oil 1L"], "Fuel", (9.0, 18.0), S, 1, alt=("Repairs & maintenance", 0.4)),
        item(["Coffee and sandwich - travelling", "Food on journey to client"], "Meals & entertainment", (4.5, 11.0), S, 1),
    ]),
    (["BP", "BP Connect"], 6, [
        item(["Unleaded {n}L", "Fuel"], "Fuel", (1.40, 1.55), S, 1, qty=[28, 35, 44]),
    ]),
    (["Trainline"], 30, [
        item(["{long_route}", "Train - {long_route}", "Rail ticket {long_route}"], "Travel", (38.0, 175.0), Z, 6),
        item(["{short_route}", "Train - {short_route}", "Rail ticket {short_route}"], "Travel", (7.5, 42.0), Z, 3),
        item(["Booking fee"], "Travel", (0.75, 2.5), S, 1),
        item(["Railcard - Two Together", "16-25 railcard for junior designer"], "Travel", (30.0, 30.0), Z, 1),
    ]),
    (["GWR"], 8, [
        item(["Off-peak return Bristol - London", "Season ticket top-up"], "Travel", (45.0, 140.0), Z, 1),
        item(["GWR ticket office - {short_route}"], "Travel", (8.0, 38.0), Z, 1),
    ]),
    (["Uber", "UBER *TRIP"], 20, [
        item(["Taxi to Temple Meads", "Taxi - station to client office, {city}", "UBER trip airport to hotel", "taxi home after late client mtg"], "Travel", (7.0, 38.0), S, 1),
    ]),
    (["Uber Eats", "UBER *EATS"], 8, [
        item(["Team lunch - sprint planning", "Lunch for team, late deadline", "Team pizza - launch night"], "Staff welfare", (35.0, 110.0), S, 2),
        item(["Working lunch with client", "Lunch delivered for client workshop"], "Meals & entertainment", (30.0, 95.0), S, 1),
    ]),
    (["Avon Cars Ltd"], 5, [
        item(["Taxi - office to Parkway", "Cab to client site", "Taxi fare"], "Travel", (9.0, 28.0), O, 1),
    ]),
    (["Premier Inn"], 8, [
        item(["Hotel 1 night {city}", "Room - {city} City Centre, 1 nt", "Overnight stay for client workshop, {city}"], "Travel", (62.0, 139.0), S, 4),
        item(["Breakfast", "Meal deal dinner - hotel"], "Meals & entertainment", (9.0, 24.0), S, 1),
    ]),
    (["British Airways"], 2, [
        item(["Flight BRS-EDI return", "Flight Bristol - Edinburgh", "Flight to Glasgow for client pitch"], "Travel", (88.0, 240.0), Z, 1),
    ]),
    (["Enterprise Rent-A-Car"], 3, [
        item(["Car hire 2 days", "Van hire - exhibition stand", "Car rental - client visit {city}"], "Travel", (60.0, 190.0), S, 1),
    ]),
    (["NCP", "NCP Car Parks"], 10, [
        item(["Parking {city}", "Car park - Cabot Circus", "Parking - client visit"], "Travel", (4.0, 22.0), S, 1),
    ]),
    (["Pret A Manger", "PRET A MANGER"], 16, [
        item(["Coffee with client", "Lunch - client meeting", "Coffees x3 - client catch up"], "Meals & entertainment", (6.0, 28.0), S, 3),
        item(["Lunch on the road", "Subsistence - lunch, {city}"], "Meals & entertainment", (5.0, 12.0), S, 2),
    ]),
    (["Costa Coffee"], 8, [
        item(["Coffee meeting - prospective client", "Coffees w/ client", "Coffee & cake - client"], "Meals & entertainment", (5.0, 18.0), S, 1),
    ]),
    (["Riverside Kitchen", "The Olive Grove", "Harbour & Vine"], 8, [
        item(["Client dinner", "Client lunch x2", "Dinner with client after pitch", "Team & client celebration dinner"], "Meals & entertainment", (45.0, 260.0), S, 1),
    ]),
    (["Deliveroo"], 5, [
        item(["Team lunch", "Food for all-hands meeting"], "Staff welfare", (40.0, 120.0), S, 1),
    ]),
    (["AquaPure Coolers"], 4, [
        item(["Water cooler bottles x{n}"], "Staff welfare", (7.0, 9.0), S, 3, qty=[3, 5, 8]),
        item(["Cooler sanitisation visit"], "Staff welfare", (35.0, 45.0), S, 1, alt=("Repairs & maintenance", 0.5)),
    ]),
    (["Currys", "Currys Business"], 10, [
        item(["Laptop 14in i7 16GB", "MacBook Air M3 13in", "Lenovo ThinkPad laptop"], "Equipment", (699.0, 1399.0), S, 3),
        item(["27in monitor", "Colour laser printer", "Wireless printer/scanner"], "Equipment", (149.0, 399.0), S, 3),
        item(["Kettle for office kitchen", "Microwave for office", "Fridge - under counter, office"], "Equipment", (25.0, 189.0), S, 2, alt=("Staff welfare", 0.3)),
        item(["Team Knowhow repair - laptop hinge", "Laptop keyboard repair", "Printer repair - paper feed"], "Repairs & maintenance", (59.0, 149.0), S, 1),
        item(["Care & Repair plan - laptop", "Extended warranty - printer"], "Insurance", (59.0, 129.0), S, 1),
    ]),
    (["Apple", "Apple Store"], 4, [
        item(["MacBook Pro 14in M3", "MacBook Air 15in"], "Equipment", (1199.0, 2199.0), S, 2),
        item(["iPad Air 11in for client presentations", "iPad Pro 13in - illustration"], "Equipment", (599.0, 1099.0), S, 1),
        item(["Magic Keyboard", "Apple Pencil Pro", "AirPods Pro for calls"], "Equipment", (99.0, 249.0), S, 1),
        item(["AppleCare+ for MacBook Pro"], "Insurance", (229.0, 279.0), S, 1),
        item(["Battery service - MacBook", "Screen repair - iPad"], "Repairs & maintenance", (129.0, 249.0), S, 1),
    ]),
    (["Fenwick Office Furniture Ltd"], 3, [
        item(["Ergonomic office chair", "Sit-stand desk 1400mm", "4 drawer filing cabinet", "Meeting table + 4 chairs"], "Equipment", (189.0, 899.0), S, 4),
        item(["Chair repair - gas lift replaced", "Desk motor repair"], "Repairs & maintenance", (45.0, 120.0), S, 1),
    ]),
    (["Screwfix"], 12, [
        item(["LED bulbs x{n}", "GU10 LED lamps x{n}"], "Repairs & maintenance", (2.5, 4.5), S, 2, qty=[4, 6, 10]),
        item(["Door closer & screws", "Replacement door handle", "Padlock & hasp for bike store", "Sealant and filler"], "Repairs & maintenance", (6.0, 38.0), S, 3),
        item(["Cordless drill", "Stepladder 3 tread"], "Equipment", (39.0, 119.0), S, 1, alt=("Repairs & maintenance", 0.4)),
        item(["Extension lead 4 gang", "Cable ties & cable tidy"], "Office supplies", (6.0, 22.0), S, 1, alt=("Repairs & maintenance", 0.5)),
    ]),
    (["Brightwire Electrical"], 2, [
        item(["PAT testing - 42 items", "Replace faulty double socket", "Emergency lighting test & repair", "Fit new light fittings, studio"], "Repairs & maintenance", (85.0, 420.0), S, 1),
    ]),
    (["Kwik Fit"], 2, [
        item(["MOT & service", "2 x front tyres", "Brake pads replaced"], "Repairs & maintenance", (140.0, 380.0), S, 2),
        item(["Tyre puncture repair", "Wiper blades fitted"], "Repairs & maintenance", (25.0, 45.0), S, 1),
    ]),
    (["PrintServ Copier Services"], 3, [
        item(["Service call - copier jam", "Copier maintenance visit"], "Repairs & maintenance", (65.0, 140.0), S, 2),
        item(["Toner cyan/magenta/yellow", "Copier toner black"], "Office supplies", (75.0, 190.0), S, 1),
    ]),
    (["Royal Mail"], 14, [
        item(["1st class stamps x{n}", "2nd class stamps x{n}", "Stamps x{n}"], "Postage", (0.85, 1.65), E, 5, qty=[12, 24, 50, 100]),
        item(["Special Delivery - contract docs", "Signed for parcel to client", "International tracked - proofs to Berlin"], "Postage", (3.5, 18.0), E, 2),
        item(["PO Box annual renewal", "Redirection - old address"], "Postage", (95.0, 360.0), S, 1),
    ]),
    (["Post Office"], 4, [
        item(["Postage - parcel to client", "Recorded delivery"], "Postage", (3.0, 14.0), E, 1),
    ]),
    (["DPD", "DPD UK"], 5, [
        item(["Courier - print samples to London", "Next day parcel collection", "Courier - artwork boards"], "Postage", (8.0, 24.0), S, 1),
    ]),
    (["Vistaprint"], 8, [
        item(["Business cards x{n}", "Flyers A5 x{n}", "Postcards for mailshot x{n}"], "Marketing", (0.05, 0.10), S, 4, qty=[250, 500, 1000]),
        item(["Roll-up banner 850mm", "Branded mugs x24", "Tote bags with logo x50"], "Marketing", (45.0, 160.0), S, 2),
        item(["Letterhead paper x{n}", "Compliment slips x{n}"], "Office supplies", (0.12, 0.20), S, 1, alt=("Marketing", 0.3), qty=[250, 500]),
    ]),
    (["Meta Platforms Ireland"], 8, [
        item(["Facebook ads - {mon}", "Instagram promoted posts", "Meta ads - portfolio campaign"], "Marketing", (40.0, 260.0), RC, 1),
    ]),
    (["LinkedIn", "LinkedIn Ireland"], 6, [
        item(["Sponsored content - {mon}", "LinkedIn ads - hiring post", "LinkedIn ads - case study promo"], "Marketing", (50.0, 300.0), RC, 3),
        item(["LinkedIn Premium Business monthly", "Sales Navigator - monthly"], "Software subscriptions", (47.0, 80.0), RC, 2, alt=("Marketing", 0.4)),
        item(["LinkedIn Learning - single licence"], "Training", (29.99, 29.99), RC, 1),
    ]),
    (["StockFrame Images BV"], 4, [
        item(["Stock photo credits x{n}"], "Marketing", (6.0, 12.0), RC, 2, qty=[5, 10, 25]),
        item(["Image licence - campaign hero", "Extended licence - illustration"], "Marketing", (25.0, 180.0), RC, 1),
    ]),
    (["SkillForge Online"], 4, [
        item(["Online course - motion design", "Course: advanced Figma", "Course - accessibility for designers", "Online course - Excel for small business"], "Training", (19.0, 149.0), S, 1),
    ]),
    (["Westcountry Design Festival"], 1, [
        item(["Conference ticket {year}", "Festival pass x2 staff"], "Training", (95.0, 340.0), S, 1),
    ]),
    (["SafeHands First Aid Training"], 1, [
        item(["First aid at work - 1 day course", "Emergency first aid refresher x2"], "Training", (95.0, 240.0), S, 1),
    ]),
    (["Waterstones"], 4, [
        item(["Book - brand identity", "Book: the business of design", "Design book - grid systems"], "Training", (12.0, 28.0), Z, 3),
        item(["Birthday card & gift wrap", "Thank-you cards"], "Staff welfare", (4.0, 12.0), S, 1),
        item(["Gift voucher - client thank you"], "Marketing", (25.0, 50.0), O, 1, alt=("Meals & entertainment", 0.5)),
    ]),
    (["Pemberton Legal LLP"], 2, [
        item(["Contract review - client MSA", "Trademark search & advice", "Employment contract templates", "Advice re late-paying client"], "Professional fees", (280.0, 1450.0), S, 1),
    ]),
    (["Companies House"], 1, [
        item(["Confirmation statement fee", "Confirmation statement filing"], "Professional fees", (34.0, 34.0), O, 1),
    ]),
    (["Chartered Society of Designers"], 1, [
        item(["Annual membership - {year}", "Membership renewal"], "Professional fees", (210.0, 260.0), E, 1, alt=("Training", 0.4)),
    ]),
    (["Bristol City Council"], 8, [
        item(["Pay & display parking", "Parking - Queen Square", "Parking permit - on street, {mon}"], "Travel", (2.5, 12.0), O, 3),
        item(["Commercial waste sacks x{n}"], "Utilities", (2.2, 3.2), O, 1, qty=[25, 50]),
    ]),
    (["Cabot Self Storage"], 1, [
        item(["Storage unit rent - exhibition stand, {mon}"], "Rent & rates", (85.0, 95.0), S, 1),
    ]),
    (["Northgate Bank"], 4, [
        item(["International payment charge", "Intl payment fee - EUR", "Unpaid item fee", "CHAPS payment fee"], "Bank charges", (5.0, 25.0), E, 1),
    ]),
]

# Bills that come round on a schedule: (supplier, description, category, (low, high), vat, every N months, day of month)
RECURRING = [
    ("Millbrook Property Management", "Office rent {q}", "Rent & rates", (2900.0, 2900.0), E, 3, 1),
    ("Millbrook Property Management", "Service charge {q}", "Rent & rates", (310.0, 340.0), E, 3, 1),
    ("Bristol City Council", "Business rates - {mon} instalment", "Rent & rates", (412.0, 412.0), O, 1, 5),
    ("Severnside Energy", "Electricity {period}", "Utilities", (70.0, 135.0), R, 1, 9),
    ("British Gas Business", "Gas {period}", "Utilities", (30.0, 140.0), R, 1, 11),
    ("Avon Valley Water", "Water & sewerage {q}", "Utilities", (58.0, 74.0), Z, 3, 14),
    ("BT Business", "Business fibre broadband - {mon}", "Telephone & internet", (39.0, 42.0), S, 1, 3),
    ("BT Business", "Phone line rental + calls {mon}", "Telephone & internet", (22.0, 34.0), S, 1, 3),
    ("Vodafone", "Mobile contract x3 - {mon}", "Telephone & internet", (54.0, 71.0), S, 1, 17),
    ("Microsoft", "Microsoft 365 Business Standard x4 - {mon}", "Software subscriptions", (40.0, 45.0), S, 1, 2),
    ("Adobe", "Creative Cloud All Apps x3 - {mon}", "Software subscriptions", (180.0, 202.0), S, 1, 6),
    ("Xero", "Xero accounting subscription {mon}", "Software subscriptions", (33.0, 42.0), S, 1, 20),
    ("Google", "Google Workspace - {mon}", "Software subscriptions", (20.0, 28.0), S, 1, 1),
    ("Google", "Google Ads - {mon}", "Marketing", (60.0, 240.0), RC, 1, 28),
    ("Tasklane Inc", "Tasklane team plan - {mon}", "Software subscriptions", (72.0, 80.0), RC, 1, 12),
    ("Cloudnest Hosting LLC", "Web hosting & backups - {mon}", "Software subscriptions", (24.0, 24.0), RC, 1, 15),
    ("Northgate Bank", "Monthly account fee", "Bank charges", (8.5, 8.5), E, 1, 28),
    ("Stripe", "Card processing fees - {mon}", "Bank charges", (12.0, 61.0), E, 1, 2),
    ("Hartwell & Co Chartered Accountants", "Monthly bookkeeping - {mon}", "Professional fees", (180.0, 180.0), S, 1, 25),
    ("Hartwell & Co Chartered Accountants", "Payroll bureau {q}", "Professional fees", (135.0, 135.0), S, 3, 25),
    ("Sparkle Office Cleaning", "Office cleaning - {mon}", "Repairs & maintenance", (240.0, 260.0), S, 1, 27),
    ("Greenbin Waste Services", "Recycling collection {q}", "Utilities", (96.0, 110.0), S, 3, 18),
    ("Sparkle Office Cleaning", "Window cleaning {q}", "Repairs & maintenance", (60.0, 60.0), S, 3, 19),
]

# Once a year, in the given month: (supplier, description, category, (low, high), vat, month, day)
ANNUAL = [
    ("Kestrel Insurance Brokers", "Professional indemnity insurance {year}", "Insurance", (760.0, 840.0), E, 4, 6),
    ("Kestrel Insurance Brokers", "Public & employers liability {year}", "Insurance", (410.0, 470.0), E, 4, 6),
    ("Kestrel Insurance Brokers", "Office contents & equipment cover {year}", "Insurance", (290.0, 330.0), E, 4, 7),
    ("Harbourside Motor Insurance", "Car insurance - company car {year}", "Insurance", (620.0, 760.0), E, 9, 1),
    ("Hartwell & Co Chartered Accountants", "Year-end accounts and corporation tax return", "Professional fees", (1150.0, 1300.0), S, 7, 30),
    ("Fasthosts", "Domain renewals (studio domains) {year}", "Software subscriptions", (38.0, 46.0), S, 2, 10),
]

CURRENCY = {"Tasklane Inc": "USD", "Cloudnest Hosting LLC": "USD", "StockFrame Images BV": "EUR"}
SYMBOL = {"GBP": "£", "USD": "$", "EUR": "€"}
