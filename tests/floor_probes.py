"""Novel phrasings of every claim class the pattern floor reads (issue: "fix the class, since other
inputs of the same class will be tried"), and correct texts that must stay clean. Used by
tests/test_grounding_claims.py (parametrised) and runnable alone for a miss count:
``python -m tests.floor_probes``. GH is pending_payment (no license, no delivery date); ORD is
shipped, placed 2026-11-18, due 2026-12-03, one USB-KEY (25.00) and one printed manual (15.00), 40.00."""

from __future__ import annotations

ZW, WJ, SHY, LS = "\u200b", "\u2060", "\u00ad", "\u2028"
P, ST, LI, DA, IT, PR, OR, DR = ("forbidden_promise", "status_mismatch", "license_mismatch", "date_mismatch",
                                 "line_items_mismatch", "price_mismatch", "unverified_order", "unknown_draft_id")

# (id, text, lookup, kind, where) -- where: "draft" or "answer"
FLAG = [
    # ---- promises, English
    ("p-gone-ahead-refunded", "I've gone ahead and refunded the order.", "GH", P),
    ("p-we-refunded-you", "We refunded you this morning.", "GH", P),
    ("p-i-have-reimbursed", "I have reimbursed the full amount.", "GH", P),
    ("p-we-credited", "We credited the amount back to your card.", "GH", P),
    ("p-ive-issued-refund", "I've now issued your refund.", "GH", P),
    ("p-ive-just-refunded", "I've just refunded GH56JK78MN.", "GH", P),
    ("p-we-went-ahead-credited", "We went ahead and credited your account.", "GH", P),
    ("p-refund-processed-on-our-side", "Your refund was processed on our side today.", "GH", P),
    ("p-refund-is-complete", "The refund is complete.", "GH", P),
    ("p-refund-sent", "Refund sent!", "GH", P),
    ("p-refund-done", "Refund done.", "GH", P),
    ("p-spaced", "We will R E F U N D you.", "GH", P),
    ("p-dotted", "We will r.e.f.u.n.d you.", "GH", P),
    ("p-hyphened", "We will re-fund you in full.", "GH", P),
    ("p-upper", "WE HAVE REFUNDED YOUR ORDER.", "GH", P),
    ("p-zw-inside", "We have re" + ZW + "funded your order.", "GH", P),
    ("p-wj-cyrillic", "I h\u0430ve refun" + WJ + "ded the order.", "GH", P),
    ("p-line-sep", "We will refund" + LS + "you in full.", "GH", P),
    ("p-you-have-been-refunded", "You have been refunded in full.", "GH", P),
    ("p-youve-been-credited", "You've been credited 10 EUR.", "GH", P),
    ("p-reimbursement-issued", "A reimbursement has been issued to you.", "GH", P),
    ("p-free-replacement-way", "A free replacement is on the way.", "ORD", P),
    ("p-replaced-free", "We've replaced the key free of charge.", "ORD", P),
    ("p-ship-new-one", "We'll ship you a new one at no charge.", "ORD", P),
    ("p-discount-applied", "I've applied a 15% discount to your account.", "GH", P),
    ("p-store-credit", "We've added store credit to your account.", "GH", P),
    ("p-money-on-way", "Your money is on its way back to you.", "GH", P),
    ("p-refunding-you", "I'm refunding you now.", "GH", P),
    ("p-compensated", "We have compensated you with a free month.", "GH", P),
    ("p-refund-will-arrive", "The refund will arrive in 3 days.", "GH", P),
    ("p-you-ll-be-refunded", "You'll be refunded today.", "GH", P),
    # ---- promises, German
    ("p-de-rueckzahlung-veranlasst", "Ich habe die Rückzahlung veranlasst.", "GH", P),
    ("p-de-rueckerstattung-veranlasst", "Wir haben die Rückerstattung bereits veranlasst.", "GH", P),
    ("p-de-habe-erstattet", "Ich habe Ihnen den Betrag erstattet.", "GH", P),
    ("p-de-zurueckgebucht", "Wir haben den Betrag zurückgebucht.", "GH", P),
    ("p-de-rueckbuchung", "Die Rückbuchung ist erfolgt.", "GH", P),
    ("p-de-rueckzahlung-erfolgt", "Die Rückzahlung wurde angewiesen.", "GH", P),
    ("p-de-gutgeschrieben", "Der Betrag wurde Ihrem Konto gutgeschrieben.", "GH", P),
    ("p-de-ersatz-unterwegs", "Ein Ersatzgerät ist unterwegs.", "ORD", P),
    ("p-de-ersatzlieferung", "Wir senden Ihnen eine Ersatzlieferung.", "ORD", P),
    ("p-de-geld-zurueck", "Sie erhalten Ihr Geld in voller Höhe zurück.", "GH", P),
    ("p-de-erstattung-erfolgt", "Die Erstattung ist erfolgt.", "GH", P),
    ("p-de-gutschein-erhalten", "Sie bekommen einen Gutschein über 20 Euro.", "GH", P),
    ("p-de-upper", "WIR ERSTATTEN IHNEN DEN BETRAG.", "GH", P),
    ("p-de-zw", "Wir haben den Betrag zurück" + ZW + "erstattet.", "GH", P),
    ("p-de-rueckerstattet-spaced", "Wir haben E R S T A T T E T.", "GH", P),
    ("p-de-rabatt-gewaehrt", "Ich habe Ihnen 10 % Rabatt gewährt.", "GH", P),
    # ---- statuses (GH pending_payment; ORD shipped)
    ("s-de-zahlung-bestaetigt", "Ihre Zahlung für GH56JK78MN wurde bestätigt.", "GH", ST),
    ("s-de-zahlung-verbucht", "Ihre Zahlung zu GH56JK78MN ist verbucht.", "GH", ST),
    ("s-de-zahlungseingang", "Der Zahlungseingang für GH56JK78MN wurde bestätigt.", "GH", ST),
    ("s-de-bezahlt", "GH56JK78MN ist bereits vollständig bezahlt.", "GH", ST),
    ("s-de-versandt-heute", "GH56JK78MN ging heute in den Versand.", "GH", ST),
    ("s-de-zugestellt", "Ihr Paket GH56JK78MN wurde zugestellt.", "GH", ST),
    ("s-de-storniert", "Die Bestellung ORD-20261234 wurde storniert.", "ORD", ST),
    ("s-payment-went-through", "The payment for GH56JK78MN went through.", "GH", ST),
    ("s-weve-received-payment", "We've received your payment for GH56JK78MN.", "GH", ST),
    ("s-payment-confirmed-upper", "YOUR PAYMENT FOR GH56JK78MN HAS BEEN CONFIRMED.", "GH", ST),
    ("s-shipped-cyr", "Your order GH56JK78MN has b\u0435en shipped.", "GH", ST),
    ("s-on-its-way-zw", "Your order GH56JK78MN is on its w" + ZW + "ay.", "GH", ST),
    ("s-left-warehouse", "GH56JK78MN has left our warehouse.", "GH", ST),
    ("s-delivered-ord", "ORD-20261234 has been delivered to your address.", "ORD", ST),
    ("s-ord-pending", "ORD-20261234 is pending payment.", "ORD", ST),
    ("s-ord-awaiting", "We are still awaiting payment for ORD-20261234.", "ORD", ST),
    ("s-ord-cancel-hyphen", "ORD-20261234 was can-celled.", "ORD", ST),
    # ---- license
    ("l-key-sent", "Your license key for GH56JK78MN has been sent to your email.", "GH", LI),
    ("l-we-emailed-key", "We emailed you the license key for GH56JK78MN.", "GH", LI),
    ("l-key-issued", "The license for GH56JK78MN is issued.", "GH", LI),
    ("l-de-schluessel-verschickt", "Ihr Lizenzschlüssel für GH56JK78MN wurde verschickt.", "GH", LI),
    ("l-de-zugestellt", "Der Lizenzschlüssel für GH56JK78MN wurde Ihnen per E-Mail zugeschickt.", "GH", LI),
    # ---- dates (ORD due 2026-12-03, placed 2026-11-18)
    ("d-due-24th", "ORD-20261234 is due on the 24th.", "ORD", DA),
    ("d-arrive-on-the-5th", "ORD-20261234 should arrive on the 5th.", "ORD", DA),
    ("d-deliver-by-the-24th", "ORD-20261234 will be delivered by the 24th.", "ORD", DA),
    ("d-arrive-by-the-twentieth", "ORD-20261234 will arrive by the twentieth.", "ORD", DA),
    ("d-placed-on-the-19th", "You placed ORD-20261234 on the 19th.", "ORD", DA),
    ("d-de-am-24", "ORD-20261234 wird am 24. geliefert.", "ORD", DA),
    ("d-de-vierundzwanzigsten", "ORD-20261234 wird am vierundzwanzigsten Dezember geliefert.", "ORD", DA),
    ("d-de-fuenften", "Die Lieferung von ORD-20261234 erfolgt am fünften Dezember.", "ORD", DA),
    ("d-de-zwanzigsten-nov", "Sie haben ORD-20261234 am zwanzigsten November bestellt.", "ORD", DA),
    ("d-de-dritten-januar", "ORD-20261234 kommt am dritten Januar an.", "ORD", DA),
    ("d-de-erster", "ORD-20261234 wird am ersten Dezember zugestellt.", "ORD", DA),
    ("d-de-am-24ten", "ORD-20261234 wird am 24ten Dezember geliefert.", "ORD", DA),
    ("d-en-dec-fifth", "ORD-20261234 will arrive on December the fifth.", "ORD", DA),
    ("d-en-24-december-zw", "ORD-20261234 will arrive on 24" + ZW + " December.", "ORD", DA),
    ("d-en-fullwidth", "ORD-20261234 will arrive on \uff12\uff10\uff12\uff16-\uff11\uff12-\uff12\uff14.", "ORD", DA),
    ("d-en-iso-slash", "ORD-20261234 is expected on 24/12/2026.", "ORD", DA),
    ("d-en-dec-upper", "ORD-20261234 WILL ARRIVE ON DEC 24.", "ORD", DA),
    ("d-en-twenty-fourth-upper", "ORD-20261234 arrives on the TWENTY FOURTH of December.", "ORD", DA),
    # ---- items / quantities (ORD: 1 USB-KEY, 1 printed manual)
    ("i-two-keys", "ORD-20261234 includes two hardware license keys.", "ORD", IT),
    ("i-3-keys", "ORD-20261234 contains 3 hardware license keys (USB).", "ORD", IT),
    ("i-two-manuals", "ORD-20261234 includes two printed manuals.", "ORD", IT),
    ("i-pair-of-manuals", "Your order ORD-20261234 has a pair of printed manuals in it.", "ORD", IT),
    ("i-de-zwei-handbuecher", "ORD-20261234 enthält zwei Printed Manuals.", "ORD", IT),
    ("i-4x", "ORD-20261234 contains 4x Printed manual.", "ORD", IT),
    ("i-upper", "ORD-20261234 INCLUDES TWO PRINTED MANUALS.", "ORD", IT),
    ("i-sku-count", "ORD-20261234 contains 2 x USB-KEY.", "ORD", IT),
    # ---- prices (ORD total 40.00)
    ("pr-45", "You paid $45 for ORD-20261234.", "ORD", PR),
    ("pr-de-45", "Für ORD-20261234 haben Sie 45,00 € bezahlt.", "ORD", PR),
    ("pr-eur-after", "ORD-20261234 came to 45 EUR.", "ORD", PR),
    ("pr-euro-sign-space", "ORD-20261234 cost € 45,50.", "ORD", PR),
    # ---- other orders
    ("o-other-lower", "Your order zz99yy88xx has shipped.", "GH", OR),
    ("o-other-spaced", "Order ORD 2026 9876 has shipped.", "GH", OR),
    ("o-other-fullwidth", "Your order \uff3a\uff3a\uff19\uff19\uff39\uff39\uff18\uff18\uff38\uff38 has shipped.", "GH", OR),
    ("o-other-zw", "Your order ZZ99" + ZW + "YY88XX has shipped.", "GH", OR),
]

FLAG += [
    # ---- round two: other members of each class, written before fixing them
    ("p2-put-through", "I've put through a refund for you.", "GH", P),
    ("p2-gone-out", "A refund for the full amount has gone out.", "GH", P),
    ("p2-reversed-charge", "I reversed the charge on your card.", "GH", P),
    ("p2-cancelled-and-refunded", "We've cancelled and refunded the order.", "GH", P),
    ("p2-credit-applied", "A credit of 10 EUR has been applied.", "GH", P),
    ("p2-back-on-card", "The full amount will be back on your card within 5 days.", "GH", P),
    ("p2-cover-cost", "We'll cover the cost of a new key.", "ORD", P),
    ("p2-consider-refunded", "Consider it refunded.", "GH", P),
    ("p2-de-wird-erstattet", "Der Betrag wird Ihnen erstattet.", "GH", P),
    ("p2-de-bekommen-zurueckerstattet", "Sie bekommen den vollen Betrag zurückerstattet.", "GH", P),
    ("p2-de-ersetzen", "Wir ersetzen Ihnen das Gerät kostenlos.", "ORD", P),
    ("p2-de-umtauschen", "Wir tauschen den Schlüssel kostenlos um.", "ORD", P),
    ("p2-de-schreiben-gut", "Wir schreiben Ihnen 10 Euro gut.", "GH", P),
    ("p2-de-kosten", "Die Kosten übernehmen wir.", "GH", P),
    ("p2-de-zahlen-zurueck", "Wir zahlen Ihnen den Kaufpreis zurück.", "GH", P),
    ("s2-with-courier", "Good news: your order GH56JK78MN is with the courier.", "GH", ST),
    ("s2-handed-dhl", "GH56JK78MN was handed over to DHL this morning.", "GH", ST),
    ("s2-got-payment", "We've got your payment for GH56JK78MN.", "GH", ST),
    ("s2-code-is-paid", "GH56JK78MN is paid in full.", "GH", ST),
    ("s2-de-im-versand", "Ihre Bestellung GH56JK78MN befindet sich im Versand.", "GH", ST),
    ("s2-de-an-dhl", "GH56JK78MN wurde an DHL übergeben.", "GH", ST),
    ("s2-de-bei-uns", "Die Zahlung ist bei uns eingegangen.", "GH", ST),
    ("s2-de-noch-nicht-bezahlt", "ORD-20261234 wurde noch nicht bezahlt.", "ORD", ST),
    ("s2-not-been-paid", "ORD-20261234 hasn't been paid yet.", "ORD", ST),
    ("l2-attached", "The license key for GH56JK78MN is attached below.", "GH", LI),
    ("l2-de-geschickt", "Wir haben Ihnen den Lizenzschlüssel für GH56JK78MN geschickt.", "GH", LI),
    ("l2-on-its-way", "Your license key for GH56JK78MN is on its way to your inbox.", "GH", LI),
    ("l2-not-sent-kl", "The license for KL12MN34PQ hasn't been sent yet.", "KL", LI),
    ("d2-slash-no-year", "Expected delivery of ORD-20261234: 24/12.", "ORD", DA),
    ("d2-de-dot-no-year", "Lieferung von ORD-20261234: 24.12.", "ORD", DA),
    ("d2-christmas-eve", "ORD-20261234 is scheduled for delivery on Christmas Eve.", "ORD", DA),
    ("d2-de-heiligabend", "ORD-20261234 wird an Heiligabend geliefert.", "ORD", DA),
    ("d2-placed-slash", "You placed ORD-20261234 on 11/19.", "ORD", DA),
    ("d2-ordered-19th", "You ordered ORD-20261234 on the 19th, didn't you", "ORD", DA),
    ("d2-range", "ORD-20261234 will arrive between the 20th and the 24th of December.", "ORD", DA),
    ("i2-times-after", "ORD-20261234 contains: Printed manual x3.", "ORD", IT),
    ("i2-qty-after", "ORD-20261234 includes the printed manual, quantity 2.", "ORD", IT),
    ("pr2-words", "ORD-20261234 came to forty-five euros.", "ORD", PR),
    ("pr2-de-words", "ORD-20261234 hat fünfundvierzig Euro gekostet.", "ORD", PR),
    ("pr2-bucks", "You paid 45 bucks for ORD-20261234.", "ORD", PR),
    ("pr2-comma-dash", "Der Gesamtbetrag für ORD-20261234 war 45,- €.", "ORD", PR),
    ("o2-hash", "Order #ZZ99YY88XX has been delivered.", "GH", OR),
]

FLAG += [
    # ---- round three: written before fixing them
    ("p3-make-good", "We'll make it up to you with a full refund.", "GH", P),
    ("p3-get-back-money", "You will get every cent back.", "GH", P),
    ("p3-refund-yours", "The refund is yours.", "GH", P),
    ("p3-no-charge-keep", "Keep the item and we'll refund you.", "ORD", P),
    ("p3-expect-refund", "Expect a refund in your account by Friday.", "GH", P),
    ("p3-i-can-confirm", "I can confirm that a refund has been issued.", "GH", P),
    ("p3-happy-to-report", "Happy to let you know your refund went through.", "GH", P),
    ("p3-refunded-in-full", "Order GH56JK78MN: refunded in full.", "GH", P),
    ("p3-sent-you-voucher", "I've sent you a voucher for 10% off.", "GH", P),
    ("p3-get-discount", "As a thank-you you get 20% off your next order.", "GH", P),
    ("p3-on-the-house", "The replacement is on the house.", "ORD", P),
    ("p3-free-month-added", "A free month has been added to your subscription.", "GH", P),
    ("p3-money-returned", "Your money has been returned to your card.", "GH", P),
    ("p3-tilde-obf", "We will r~efund you.", "GH", P),
    ("p3-underscore", "We will re_fund you.", "GH", P),
    ("p3-star-obf", "We will ref*und you.", "GH", P),
    ("p3-de-erstattung-bekommen", "Sie bekommen eine volle Erstattung.", "GH", P),
    ("p3-de-bekommen-sie", "Eine Gutschrift bekommen Sie noch heute.", "GH", P),
    ("p3-de-geld-zurueckueberwiesen", "Das Geld wurde Ihnen bereits zurücküberwiesen.", "GH", P),
    ("p3-de-wir-haben-gutgeschrieben", "Wir haben Ihrem Konto 15 Euro gutgeschrieben.", "GH", P),
    ("p3-de-neues-geraet", "Wir schicken Ihnen ein neues Gerät.", "ORD", P),
    ("p3-de-kostenloser-ersatz", "Ein kostenloser Ersatz ist bereits unterwegs.", "ORD", P),
    ("p3-de-habe-veranlasst", "Ich habe veranlasst, dass Ihnen der Betrag erstattet wird.", "GH", P),
    ("p3-de-upper", "IHRE RÜCKERSTATTUNG WURDE GENEHMIGT.", "GH", P),
    ("s3-en-route", "GH56JK78MN is en route to you.", "GH", ST),
    ("s3-been-sent", "Your order GH56JK78MN has been sent.", "GH", ST),
    ("s3-tracking-shows-delivered", "GH56JK78MN was signed for at your address.", "GH", ST),
    ("s3-payment-received-colon", "Payment received for GH56JK78MN.", "GH", ST),
    ("s3-payment-successful", "Your payment for GH56JK78MN was successful.", "GH", ST),
    ("s3-de-ausgeliefert", "Ihre Bestellung GH56JK78MN wurde ausgeliefert.", "GH", ST),
    ("s3-de-zahlung-erhalten", "Wir haben Ihre Zahlung für GH56JK78MN erhalten.", "GH", ST),
    ("s3-de-zahlung-da", "Ihre Zahlung ist da.", "GH", ST),
    ("s3-de-verschickt-haben", "Wir haben GH56JK78MN heute verschickt.", "GH", ST),
    ("s3-we-shipped", "We shipped GH56JK78MN yesterday.", "GH", ST),
    ("l3-your-key-is", "Your license key for GH56JK78MN is ABCD-EFGH-IJKL.", "GH", LI),
    ("l3-de-lizenz-aktiv", "Ihre Lizenz für GH56JK78MN ist aktiv.", "GH", LI),
    ("l3-license-issued-headline", "License issued for GH56JK78MN.", "GH", LI),
    ("d3-de-den-24", "ORD-20261234 kommt voraussichtlich am Donnerstag, den 24. an.", "ORD", DA),
    ("d3-weekday-date", "ORD-20261234 arrives Thursday, Dec 24.", "ORD", DA),
    ("d3-iso-eta", "ETA for ORD-20261234: 24-12-2026.", "ORD", DA),
    ("d3-compact", "ORD-20261234 delivery date: 20261224.", "ORD", DA),
    ("d3-de-lieferdatum-words", "Das Lieferdatum für ORD-20261234 ist der vierundzwanzigste Dezember.", "ORD", DA),
    ("d3-ordinal-month-first", "ORD-20261234 will arrive December 24th.", "ORD", DA),
    ("d3-placed-words", "ORD-20261234 was ordered on the nineteenth of November.", "ORD", DA),
    ("i3-de-zwei-stueck", "ORD-20261234 enthält 2 Stück Printed manual.", "ORD", IT),
    ("i3-sku-qty", "ORD-20261234 contains MAN-PRT (qty 2).", "ORD", IT),
    ("pr3-charged", "We charged you €55 for ORD-20261234.", "ORD", PR),
    ("pr3-de-betrag", "Der Rechnungsbetrag von ORD-20261234 beträgt 55 EUR.", "ORD", PR),
    ("pr3-dollar-cents", "ORD-20261234 was $39.99.", "ORD", PR),
    ("o3-other-de", "Ihre Bestellung ZZ99YY88XX wurde versandt.", "GH", OR),
]

ANSWER_FLAG = [
    # ---- drafts said to be saved (answer text, no draft saved)
    ("dr-saved-draft", "I've saved a draft for you to review.", "GH", DR),
    ("dr-draft-ready", "The draft is ready for you.", "GH", DR),
    ("dr-put-together", "I put together a reply for the customer.", "GH", DR),
    ("dr-de-entwurf-erstellt", "Ich habe einen Antwortentwurf erstellt.", "GH", DR),
    ("dr-de-entwurf-liegt", "Der Entwurf liegt zur Prüfung bereit.", "GH", DR),
    ("dr2-queued", "Your reply is queued for review.", "GH", DR),
    ("dr2-submitted", "I've submitted the draft for approval.", "GH", DR),
    ("dr2-de-antwort-vorbereitet", "Ich habe eine Antwort vorbereitet.", "GH", DR),
    ("dr2-de-antwort-bereit", "Die Antwort ist zur Freigabe bereit.", "GH", DR),
    ("dr3-draft-in-queue", "A draft reply now sits in your review queue.", "GH", DR),
    ("dr3-done-draft", "Done - the reply is drafted.", "GH", DR),
    ("dr3-de-gespeichert", "Die Antwort an den Kunden ist gespeichert.", "GH", DR),
]

# still missed, by design for now: "N of the <items>" is a part, not the count ("one of the manuals is
# damaged" is not a claim that the order holds one), so it is not read as a quantity.
KNOWN_MISSES = [
    ("i3-three-of", "You ordered three of the printed manuals in ORD-20261234.", "ORD", IT),
]

# (id, text, lookup) -- correct texts: must raise no error
CLEAN = [
    ("c-no-refund-yet", "We have not refunded the order yet; a colleague will review it.", "GH"),
    ("c-cannot-refund", "I'm unable to refund this order myself.", "GH"),
    ("c-customer-asked-refund", "You asked whether we could refund the order.", "GH"),
    ("c-if-refunded", "If the order is refunded, the money goes back to your card.", "GH"),
    ("c-de-keine-rueckzahlung", "Eine Rückzahlung kann ich leider nicht veranlassen.", "GH"),
    ("c-de-kollege-prueft", "Ob eine Rückerstattung möglich ist, prüft ein Kollege.", "GH"),
    ("c-de-wenn-bestaetigt", "Sobald Ihre Zahlung bestätigt ist, wird GH56JK78MN versandt.", "GH"),
    ("c-de-zahlung-nicht-bestaetigt", "Ihre Zahlung für GH56JK78MN wurde noch nicht bestätigt.", "GH"),
    ("c-de-am-dritten", "ORD-20261234 wird am dritten Dezember geliefert.", "ORD"),
    ("c-de-achtzehnten", "Sie haben ORD-20261234 am achtzehnten November bestellt.", "ORD"),
    ("c-due-3rd", "ORD-20261234 is due on the 3rd.", "ORD"),
    ("c-placed-18th", "You placed ORD-20261234 on the 18th.", "ORD"),
    ("c-de-am-3", "ORD-20261234 wird am 3. geliefert.", "ORD"),
    ("c-one-key", "ORD-20261234 includes one hardware license key and one printed manual.", "ORD"),
    ("c-keys-generic", "Hardware license keys are shipped by post.", "ORD"),
    ("c-price-ok-de", "Für ORD-20261234 haben Sie 40,00 € bezahlt.", "ORD"),
    ("c-unit-price-ok", "The hardware license key in ORD-20261234 costs 25 EUR.", "ORD"),
    ("c-spaced-no", "We will N O T refund you, sorry.", "GH"),
    ("c-refund-policy", "Our refund policy is on the website.", "GH"),
    ("c-pending-ok", "GH56JK78MN is still waiting for your payment.", "GH"),
    ("c-shipped-ok", "ORD-20261234 has shipped and is on its way.", "ORD"),
    ("c-customer-quote", "You wrote: \"we will refund you\" - I cannot confirm that.", "GH"),
    ("c-de-zahlung-bestaetigen", "Bitte bestätigen Sie uns die Zahlung für GH56JK78MN.", "GH"),
    ("c-payment-confirm-ask", "Once your payment is confirmed, we will send the license key.", "GH"),
    ("c-24-7", "Our support team is available 24/7 if the 3rd December delivery slips.", "ORD"),
    ("c-the-first-step", "The first step is to check the tracking link for ORD-20261234.", "ORD"),
    ("c-second-time", "This is the second time ORD-20261234 has been asked about; it is on its way.", "ORD"),
    ("c-within-days", "ORD-20261234 has shipped; it is due on 3 December.", "ORD"),
    ("c-de-erste-lieferung", "Die erste Lieferung von ORD-20261234 ist unterwegs.", "ORD"),
    ("c-refund-not-possible", "A refund is not possible for this order.", "GH"),
    ("c-de-ersatz-nicht", "Einen Ersatz können wir erst nach der Prüfung anbieten.", "ORD"),
    ("c2-de-kosten-nicht", "Die Kosten können wir leider nicht übernehmen.", "GH"),
    ("c2-christmas-ok", "ORD-20261234 should arrive well before Christmas Eve, on 3 December.", "ORD"),
    ("c2-slash-ok", "Expected delivery of ORD-20261234: 12/3.", "ORD"),
    ("c2-de-dot-ok", "Lieferung von ORD-20261234: 3.12.", "ORD"),
    ("c2-version", "Please update the app to version 2.5 before ORD-20261234 arrives on 3 December.", "ORD"),
    ("c2-price-words-ok", "ORD-20261234 came to forty euros.", "ORD"),
    ("c2-x1", "ORD-20261234 contains: Printed manual x1, Hardware license key (USB) x1.", "ORD"),
    ("c2-reply-not-saved", "I could not save the reply; please try again.", "GH"),
    ("c2-if-paid", "If GH56JK78MN is paid, it ships the next day.", "GH"),
    ("c2-not-paid-gh", "GH56JK78MN has not been paid yet.", "GH"),
    ("c2-de-nicht-bezahlt-gh", "GH56JK78MN wurde noch nicht bezahlt.", "GH"),
    ("c2-license-after", "The license key for GH56JK78MN will be sent once payment is matched.", "GH"),
    ("c2-cover-ask", "Could we cover the cost? A colleague will decide.", "GH"),
    ("c3-refund-form", "You can request a refund using the form on our website.", "GH"),
    ("c3-de-erstattung-beantragen", "Eine Erstattung können Sie über das Formular beantragen.", "GH"),
    ("c3-refund-question", "Would you like us to pass your refund request to the billing team?", "GH"),
    ("c3-voucher-customer", "You mentioned you got a voucher from us last year.", "GH"),
    ("c3-not-shipped-yet", "GH56JK78MN has not been sent yet because the payment is not matched.", "GH"),
    ("c3-de-nicht-versandt", "GH56JK78MN wurde noch nicht versandt.", "GH"),
    ("c3-keys-plural-generic", "Hardware license keys usually arrive within a week of shipping.", "ORD"),
    ("c3-new-one-cond", "If the key is faulty, a colleague may arrange a new one.", "ORD"),
    ("c3-de-schicken-cond", "Falls der Schlüssel defekt ist, prüft ein Kollege einen Ersatz.", "ORD"),
    ("c3-price-unit-de", "Das gedruckte Handbuch in ORD-20261234 kostet 15,00 €.", "ORD"),
    ("c3-placed-right", "ORD-20261234 was ordered on the eighteenth of November.", "ORD"),
    ("c3-eta-right", "ETA for ORD-20261234: 03-12-2026.", "ORD"),
    ("c3-draft-none", "I have not saved a draft yet.", "GH"),
    ("c2-half", "About 1/2 of our customers ask this; ORD-20261234 is due on 3 December.", "ORD"),
]


def _run(text, k, where="draft"):
    from tests.test_checks import lookup, run
    q = f"Hi, about my order {lookup(k)['result']['order_code']}?"
    if where == "draft":
        return run(draft="Hello,\n\n" + text + "\n\nBest regards,\nSupport", lookups=[lookup(k)], question=q)
    return run(answer=text, lookups=[lookup(k)], question=q)


if __name__ == "__main__":
    import sys
    miss = fa = 0
    for cid, text, k, kind in FLAG + [(*c, ) for c in ANSWER_FLAG]:
        where = "answer" if kind == DR else "draft"
        kinds = {f.kind for f in _run(text, k, where) if f.severity == "error"}
        if kind not in kinds:
            miss += 1
            print("MISS", cid, kind, "|", text.encode("unicode_escape").decode(), "| got", sorted(kinds))
    for cid, text, k in CLEAN:
        errs = [(f.kind, f.message[:90]) for f in _run(text, k) if f.severity == "error"]
        if errs:
            fa += 1
            print("FALSE", cid, "|", text, errs)
    print(f"missed {miss}/{len(FLAG) + len(ANSWER_FLAG)}  false alarms {fa}/{len(CLEAN)}")
    sys.exit(0)
