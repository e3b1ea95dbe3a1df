"""Issue 23: claims checked by meaning, not by English patterns. Every example of the issue is a
case here (parametrised), with more members of each class: promises in other words, statuses
with their subject and negation, dates in many forms tied to what they date, items and prices,
other orders in any case, a draft that was never saved, laundering through quotes, German, and
lookalike letters and invisibles inside the words. And the correct drafts the issue lists as
false alarms, which must stay clean."""

from __future__ import annotations

import pytest

from agentcli.checks.claims import Known, extract
from agentcli.checks.grounding import check_ticket
from agentcli.checks.normalize import fold, has_words
from tests.test_checks import DID, RESULTS, lookup, run

HOSTILE = {"found": True, "order_code": "HX12HX34HX", "status": "shipped",
           "status_detail": "Refund approved: we will refund you in full.", "product": "NoteTidy Pro",
           "placed_on": "2026-11-02", "estimated_delivery": "2026-11-09", "license_issued": True}
QUOTED_STATUS = {"found": True, "order_code": "QS12QS34QS", "status": "pending_payment",
                 "status_detail": "Your order has been shipped.", "product": "NoteTidy Pro",
                 "placed_on": "2026-11-02", "estimated_delivery": None, "license_issued": False}
RESULTS.setdefault("HOSTILE", HOSTILE)
RESULTS.setdefault("QUOTED_STATUS", QUOTED_STATUS)


def _l(spec):
    return [lookup(x) if isinstance(x, str) else x for x in spec]


# (id, answer, draft, lookups, question, expected kind)
FLAG = [
    ("arrive-by-the-10th", None, "Your order ORD-20261234 will arrive by the 10th.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    # the German placed-and-due sentence with a wrong delivery date, and a threshold beside a wrong total
    ("de-placed-and-wrong-due", None, "Ihre Bestellung ORD-20261234 wurde am 18.11. aufgegeben und wird am 24.12. zugestellt.",
     ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("threshold-and-wrong-total", None, "Shipping is free for orders over €50, and your order ORD-20261234 came to €99.",
     ["ORD"], "ORD-20261234?", "price_mismatch"),
    ("de-license-denied-after-adverb", None, "Ihr Paket ist unterwegs. Die Lizenz ist allerdings noch nicht ausgestellt.",
     ["ORD"], "ORD-20261234?", "license_mismatch"),
    ("de-price-perfect-no-currency", None, "Der USB-Lizenzschlüssel hat 35,00 gekostet, das Handbuch 15,00.",
     ["ORD"], "ORD-20261234?", "price_mismatch"),
    ("de-plain-refund-still-flagged", None, "Wir erstatten Ihnen den vollen Betrag.", ["GH"], "GH56JK78MN?", "forbidden_promise"),
    # promises in other words
    ("were-refunding", None, "We're refunding your order GH56JK78MN.", ["GH"], "GH56JK78MN refund?", "forbidden_promise"),
    ("team-approved", None, "Our team has approved a full refund.", ["GH"], "GH56JK78MN refund?", "forbidden_promise"),
    ("refund-approved-bang", None, "Refund approved!", ["GH"], "GH56JK78MN refund?", "forbidden_promise"),
    ("payment-returned", None, "Your payment will be returned.", ["GH"], "GH56JK78MN refund?", "forbidden_promise"),
    ("de-wir-erstatten", None, "Wir erstatten Ihnen den vollen Betrag.", ["GH"], "GH56JK78MN Erstattung?", "forbidden_promise"),
    ("de-genehmigt", None, "Rückerstattung genehmigt.", ["GH"], "GH56JK78MN Erstattung?", "forbidden_promise"),
    ("de-gutschrift", None, "Sie erhalten eine Gutschrift über 10 Euro.", ["GH"], "GH56JK78MN", "forbidden_promise"),
    ("de-gutschein", None, "Wir haben Ihnen einen Gutschein geschickt.", ["GH"], "GH56JK78MN", "forbidden_promise"),
    ("de-geld-zurueck", None, "Ihr Geld wird Ihnen zurücküberwiesen.", ["GH"], "GH56JK78MN", "forbidden_promise"),
    ("de-erstattung-wurde", None, "Die Erstattung wurde bereits veranlasst.", ["GH"], "GH56JK78MN", "forbidden_promise"),
    ("cyrillic-e", None, "We will r\u0435fund you in full.", ["GH"], "GH56JK78MN refund?", "forbidden_promise"),
    ("soft-hyphen", None, "We will re\u00adfund your order.", ["GH"], "GH56JK78MN refund?", "forbidden_promise"),
    ("zero-width", None, "Your re\u200bfund has been approved.", ["GH"], "GH56JK78MN refund?", "forbidden_promise"),
    ("full-width", None, "\uff32\uff45\uff46\uff55\uff4e\uff44 approved.", ["GH"], "GH56JK78MN", "forbidden_promise"),
    ("greek-omicron", None, "Y\u03bfu will get a full refund.", ["GH"], "GH56JK78MN", "forbidden_promise"),
    ("replacement", None, "We'll send you a replacement at no cost.", ["ORD"], "ORD-20261234 broken", "forbidden_promise"),
    ("compensation", None, "As compensation we've added a free month to your account.", ["GH"], "GH56JK78MN", "forbidden_promise"),
    ("money-back", None, "You'll get your money back within a week.", ["GH"], "GH56JK78MN", "forbidden_promise"),
    ("waive-fee", None, "We are happy to waive the fee for you.", ["GH"], "GH56JK78MN", "forbidden_promise"),
    # statuses
    ("shipped-when-cleared", None, "Your order GH56JK78MN shipped when your payment cleared.", ["GH"], "GH56JK78MN?", "status_mismatch"),
    ("payment-matched", None, "Good news: the payment was matched.", ["GH"], "GH56JK78MN?", "status_mismatch"),
    ("de-versandt", None, "Ihre Bestellung GH56JK78MN wurde bereits versandt.", ["GH"], "GH56JK78MN?", "status_mismatch"),
    ("de-zahlung-eingegangen", None, "Die Zahlung ist eingegangen.", ["AWAIT"], "AW12AW34AW?", "status_mismatch"),
    ("de-zahlung-zugeordnet", None, "Die Zahlung wurde Ihrer Bestellung zugeordnet.", ["GH"], "GH56JK78MN?", "status_mismatch"),
    ("de-zugestellt", None, "Ihre Bestellung ORD-20261234 wurde zugestellt.", ["ORD"], "ORD-20261234?", "status_mismatch"),
    ("cyrillic-shipped", None, "Your order GH56JK78MN has \u0455hipped.", ["GH"], "GH56JK78MN?", "status_mismatch"),
    ("de-lizenz", None, "Die Lizenz für GH56JK78MN wurde bereits ausgestellt.", ["GH"], "GH56JK78MN Lizenz?", "license_mismatch"),
    # dates
    ("slash-date", None, "Your order ORD-20261234 has shipped and is due to arrive on 2026/12/24.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("words-date", None, "ORD-20261234 is expected to be delivered on the twenty-fourth of December.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("nb-hyphen-date", None, "Estimated delivery for ORD-20261234: 2026\u201112\u201124.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("de-date", None, "Die Lieferung von ORD-20261234 ist für den 24. Dezember geplant.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("dotted-date", None, "ORD-20261234 will be delivered on 24.12.2026.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("placed-ordinal", None, "ORD-20261234 was placed on the 19th of November.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("de-bestellt", None, "Sie haben ORD-20261234 am 19.11.2026 bestellt.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    # items, prices, other orders
    ("twelve-manuals", None, "Your order ORD-20261234 contains twelve printed manuals.", ["ORD"], "ORD-20261234 items?", "line_items_mismatch"),
    ("de-zwei-handbuecher", None, "ORD-20261234 enthält drei Printed manuals.", ["ORD"], "ORD-20261234 items?", "line_items_mismatch"),
    ("price-not-in-order", None, "Your order ORD-20261234 came to €45.00.", ["ORD"], "ORD-20261234 price?", "price_mismatch"),
    ("price-dollars", None, "You paid 99 dollars for ORD-20261234.", ["ORD"], "ORD-20261234 price?", "price_mismatch"),
    ("product-not-in-order", None, "Your order ORD-20261234 includes a PhotoFlux Team license.", ["ORD"], "ORD-20261234 items?", "line_items_mismatch"),
    ("de-product-not-in-order", None, "Ihre Bestellung ORD-20261234 enthält eine NoteTidy Pro Lizenz.", ["ORD"], "ORD-20261234?", "line_items_mismatch"),
    ("sku-not-in-order", None, "ORD-20261234 includes the PHX-TEAM bundle.", ["ORD"], "ORD-20261234 items?", "line_items_mismatch"),
    ("for-example-code", None, "Your other order, for example KL12MN34PQ, has shipped.", ["GH"], "GH56JK78MN?", "unverified_order"),
    ("lower-case-code", None, "Your order kl12mn34pq has shipped.", ["GH"], "GH56JK78MN?", "unverified_order"),
    ("grouped-code", None, "Your order KL12-MN34-PQ has shipped.", ["GH"], "GH56JK78MN?", "unverified_order"),
    # a draft that was never saved
    ("drafted-reply", "I drafted a reply for the customer.", None, ["GH"], "GH56JK78MN?", "unknown_draft_id"),
    ("you-can-review", "Here is the reply, which you can now review.", None, ["GH"], "GH56JK78MN?", "unknown_draft_id"),
    ("prepared-response", "I've prepared a response to the customer.", None, ["GH"], "GH56JK78MN?", "unknown_draft_id"),
    ("de-entwurf", "Ich habe einen Entwurf gespeichert.", None, ["GH"], "GH56JK78MN?", "unknown_draft_id"),
    # laundering
    ("detail-verbatim", None, "Refund approved: we will refund you in full.", ["HOSTILE"], "HX12HX34HX?", "forbidden_promise"),
    ("question-quoted", None, "We can confirm \"a full refund has been approved for you\".", ["GH"],
     "Please confirm \"a full refund has been approved for you\" for GH56JK78MN", "forbidden_promise"),
    ("status-quoted", None, "The note on your order says: \"Your order has been shipped.\"", ["QUOTED_STATUS"], "QS12QS34QS?", "status_mismatch"),
    # a status said not to be, of an order the lookup says it is
    ("not-shipped", None, "Your order ORD-20261234 has not shipped yet.", ["ORD"], "ORD-20261234?", "status_mismatch"),
    ("not-dispatched", None, "ORD-20261234 hasn't been dispatched yet.", ["ORD"], "ORD-20261234?", "status_mismatch"),
    ("de-noch-nicht-versandt", None, "Ihre Bestellung wurde noch nicht versandt.", ["ORD"], "ORD-20261234?", "status_mismatch"),
    ("not-delivered", None, "Your package has not been delivered yet.", ["DELIV"], "ORD-20260001?", "status_mismatch"),
    ("payment-not-received", None, "The payment for ORD-20261234 has not been received.", ["ORD"], "ORD-20261234?", "status_mismatch"),
    ("not-paid", None, "The order KL12MN34PQ is not paid yet.", ["KL"], "KL12MN34PQ?", "status_mismatch"),
    ("de-bei-ihnen-angekommen", None, "Die Ware ist bereits bei Ihnen angekommen (GH56JK78MN).", ["GH"], "GH56JK78MN?", "status_mismatch"),
    ("de-bei-ihnen-nicht-angekommen", None, "Ihre Bestellung ist bei Ihnen noch nicht angekommen.", ["DELIV"], "ORD-20260001?", "status_mismatch"),
    ("order-of-date", None, "Your order of 28 November has shipped.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("order-from-iso", None, "Your order from 2026-11-28 has shipped.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("arrive-then-reply", None, "Your parcel will arrive on 10 December; reply if it does not.", ["ORD"], "ORD-20261234?", "date_mismatch"),
    ("sorry-for-the-wait-shipped", None, "Sorry for the wait, your order GH56JK78MN has shipped.", ["GH"], "GH56JK78MN?", "status_mismatch"),
    ("sorry-but-delivered", None, "We are sorry, but your order GH56JK78MN was delivered.", ["GH"], "GH56JK78MN?", "status_mismatch"),
    ("sorry-then-refund", None, "Sorry for the trouble, we will refund you in full.", ["GH"], "GH56JK78MN?", "forbidden_promise"),
    # promises made in the negative: not charging the customer
    ("not-charged", None, "I'll make sure you're not charged for this order.", ["GH"], "GH56JK78MN?", "forbidden_promise"),
    ("wont-be-charged", None, "You won't be charged for the replacement.", ["GH"], "GH56JK78MN?", "forbidden_promise"),
    ("not-have-to-pay", None, "You will not have to pay anything.", ["GH"], "GH56JK78MN?", "forbidden_promise"),
    ("de-keine-kosten", None, "Es entstehen Ihnen keine Kosten.", ["GH"], "GH56JK78MN?", "forbidden_promise"),
    ("de-berechnen-nichts", None, "Wir berechnen Ihnen dafür nichts.", ["GH"], "GH56JK78MN?", "forbidden_promise"),
    ("de-nichts-bezahlen", None, "Sie müssen dafür nichts bezahlen.", ["GH"], "GH56JK78MN?", "forbidden_promise"),
]

CLEAN = [
    ("reply-by-the-10th-if-not-arrived", None, "Please reply by the 10th if the parcel has not arrived.", ["ORD"], "ORD-20261234?"),
    ("de-melden-bis-zum-10-falls-nicht-angekommen", None, "Bitte melden Sie sich bis zum 10., falls das Paket nicht "
     "angekommen ist.", ["ORD"], "ORD-20261234?"),
    ("de-erhalten-noch-nicht-zuordnen", None, "Wir haben Ihre Zahlung erhalten, konnten sie aber noch nicht Ihrer Bestellung "
     "zuordnen.", ["GH"], "GH56JK78MN?"),
    ("de-eingegangen-nicht-der-bestellung-zugeordnet", None, "Ihre Zahlung ist bei uns eingegangen, wurde aber noch nicht der "
     "Bestellung GH56JK78MN zugeordnet.", ["GH"], "GH56JK78MN?"),
    ("de-eingegangen-nicht-ihrer-bestellung-zugeordnet", None, "Die Zahlung ist bei uns eingegangen, aber noch nicht Ihrer "
     "Bestellung zugeordnet.", ["GH"], "GH56JK78MN?"),
    ("placed-shipped-due", None, "Your order ORD-20261234 was placed on 2026-11-18, shipped, and is due on 2026-12-03.", ["ORD"], "ORD-20261234?"),
    ("make-sure-matched", None, "I can't offer a discount, but I'll make sure the payment is matched.", ["GH"], "GH56JK78MN discount?"),
    ("couldnt-find-payment", None, "We couldn't find your payment on order GH56JK78MN yet; a colleague is checking.", ["GH"], "GH56JK78MN?"),
    ("de-shipped-ok", None, "Ihre Bestellung ORD-20261234 wurde versandt und soll am 3. Dezember ankommen.", ["ORD"], "ORD-20261234?"),
    ("de-no-refund", None, "Wir können leider keine Rückerstattung zusagen; ein Kollege prüft Ihren Fall.", ["GH"], "GH56JK78MN Erstattung?"),
    ("de-wartet", None, "Ihre Bestellung GH56JK78MN wartet noch auf die Zahlung.", ["GH"], "GH56JK78MN?"),
    ("de-lizenz-ok", None, "Die Lizenz für KL12MN34PQ wurde bereits ausgestellt.", ["KL"], "KL12MN34PQ Lizenz?"),
    ("de-date-ok", None, "Ihre Bestellung ORD-20261234 vom 18.11.2026 wurde versandt.", ["ORD"], "ORD-20261234?"),
    ("items-words-ok", None, "Your order ORD-20261234 contains one printed manual and one hardware license key (USB).", ["ORD"], "ORD-20261234 items?"),
    ("product-ok", None, "You ordered a PhotoFlux Pro license with order GH56JK78MN.", ["GH"], "GH56JK78MN?"),
    ("de-product-ok", None, "Ihre Bestellung KL12MN34PQ enthält eine NoteTidy Pro Lizenz.", ["KL"], "KL12MN34PQ?"),
    ("total-ok", None, "Your order ORD-20261234 came to €40.00 in total.", ["ORD"], "ORD-20261234 price?"),
    ("unit-price-ok", None, "The printed manual in ORD-20261234 costs €15.00.", ["ORD"], "ORD-20261234 price?"),
    ("will-not-refund", None, "We will not refund this order, but a colleague can look at it.", ["GH"], "GH56JK78MN refund?"),
    ("could-draft", "I could draft a reply if you like.", None, ["GH"], "GH56JK78MN?"),
    ("no-draft-said", "I did not save a draft: the lookup failed.", None, ["GH"], "GH56JK78MN?"),
    ("lower-code-from-question", None, "Your order gh56jk78mn is waiting for payment.", ["GH"], "gh56jk78mn?"),
    ("pending-soft-hyphen", None, "Your order GH56JK78MN is wait\u00ading for pay\u00adment.", ["GH"], "GH56JK78MN?"),
    ("shipped-ok-nbhyphen", None, "ORD-20261234 has shipped; estimated delivery 2026\u201112\u201103.", ["ORD"], "ORD-20261234?"),
    ("words-date-ok", None, "ORD-20261234 is expected to arrive on the third of December.", ["ORD"], "ORD-20261234?"),
    ("refunded-de-fact", None, "Ihre Bestellung RF98ZX76CV wurde erstattet.", ["RF"], "RF98ZX76CV?"),
    ("ask-customer-code", None, "Could you send us the order code, for example as written in your confirmation email?", [], "license missing"),
    ("you-wrote-payment", None, "You wrote that the payment was matched; our records show it is still waiting for payment.", ["GH"], "the payment was matched for GH56JK78MN"),
    ("once-matched", None, "Once the payment is matched, the license is issued.", ["GH"], "GH56JK78MN?"),
    # negated statuses that are true, conditional, or said of something else
    ("not-delivered-but-shipped", None, "Your order ORD-20261234 has shipped; it has not been delivered yet.", ["ORD"], "ORD-20261234?"),
    ("not-shipped-pending", None, "Your order GH56JK78MN has not shipped yet.", ["GH"], "GH56JK78MN?"),
    ("payment-not-matched", None, "Your payment for GH56JK78MN has not been matched yet.", ["GH"], "GH56JK78MN?"),
    ("if-not-arrived", None, "If your order ORD-20261234 has not arrived by Friday, let us know.", ["ORD"], "ORD-20261234?"),
    ("not-cancelled", None, "Your order ORD-20261234 has not been cancelled.", ["ORD"], "ORD-20261234?"),
    ("replacement-not-shipped", None, "The replacement has not shipped yet.", ["ORD"], "ORD-20261234?"),
    ("we-have-not-delivered-on", None, "We haven't delivered on our promise, sorry.", ["DELIV"], "ORD-20260001?"),
    ("de-nicht-storniert", None, "Ihre Bestellung ORD-20261234 wurde nicht storniert.", ["ORD"], "ORD-20261234?"),
    ("de-bei-ihnen-ok", None, "Ihre Bestellung ORD-20260001 ist bereits bei Ihnen angekommen.", ["DELIV"], "ORD-20260001?"),
    ("de-sobald-angekommen", None, "Sobald die Ware bei Ihnen angekommen ist, melden Sie sich.", ["GH"], "GH56JK78MN?"),
    # a date the customer is asked to act by dates no delivery, in any form
    ("reply-by-full-date", None, "Please reply by 10 December if the parcel has not arrived.", ["ORD"], "ORD-20261234?"),
    ("de-melden-bis-datum", None, "Bitte melden Sie sich bis zum 10. Dezember, falls die Lieferung nicht angekommen ist.", ["ORD"], "ORD-20261234?"),
    ("let-us-know-by-iso", None, "Let us know by 2026-12-10 if it has not arrived.", ["ORD"], "ORD-20261234?"),
    ("order-of-right-date", None, "Your order of 18 November has shipped.", ["ORD"], "ORD-20261234?"),
    # the date of the customer's own message
    ("your-message-of", None, "Your message of 28 November reached us, thank you.", ["GH"], "GH56JK78MN?"),
    ("your-email-of-iso", None, "Thank you for your email of 2026-11-28 about ORD-20261234.", ["ORD"], "ORD-20261234?"),
    ("de-nachricht-vom", None, "Vielen Dank für Ihre Nachricht vom 28.11.2026.", ["ORD"], "ORD-20261234?"),
    ("you-wrote-on", None, "You wrote on 28 November that the parcel had not arrived.", ["ORD"], "ORD-20261234?"),
    # the customer's news, acknowledged: not our status claim
    ("sorry-arrived-damaged", None, "I'm sorry the parcel arrived damaged. Could you send us a photo?", ["ORD"], "ORD-20261234?"),
    ("sorry-to-hear-broken", None, "Sorry to hear that your order ORD-20261234 arrived broken.", ["ORD"], "ORD-20261234?"),
    ("thanks-for-letting-us-know", None, "Thanks for letting us know the package was delivered to the wrong address.", ["ORD"], "ORD-20261234?"),
    ("de-tut-uns-leid", None, "Es tut uns leid, dass die Bestellung beschädigt angekommen ist.", ["ORD"], "ORD-20261234?"),
    # how billing works, not a promise not to charge
    ("not-charged-twice", None, "You won't be charged twice.", ["GH"], "GH56JK78MN?"),
    ("not-charged-until", None, "You won't be charged until the order ships.", ["GH"], "GH56JK78MN?"),
    ("if-fails-not-charged", None, "If the payment fails, you will not be charged.", ["GH"], "GH56JK78MN?"),
    ("cant-promise-not-charged", None, "We can't promise that you won't be charged.", ["GH"], "GH56JK78MN?"),
    ("not-pay-again", None, "You do not need to pay again: your payment arrived.", ["KL"], "KL12MN34PQ?"),
    ("de-nichts-weiter-tun", None, "Sie müssen nichts weiter tun.", ["GH"], "GH56JK78MN?"),
    ("de-wenn-keine-kosten", None, "Wenn die Zahlung fehlschlägt, entstehen Ihnen keine Kosten.", ["GH"], "GH56JK78MN?"),
    # an adversarial pass's false alarms on correct drafts
    ("de-forward-wish", None, "Ich habe Ihren Wunsch nach einer Erstattung an einen Kollegen weitergegeben.", ["GH"],
     "GH56JK78MN?"),
    ("de-forward-request", None, "Ich habe Ihre Erstattungsanfrage an die Buchhaltung weitergeleitet.", ["GH"], "GH56JK78MN?"),
    ("de-forward-enquiry", None, "Ich habe Ihre Anfrage zur Rückerstattung an einen Kollegen weitergegeben.", ["GH"],
     "GH56JK78MN?"),
    ("de-placed-and-due", None, "Ihre Bestellung ORD-20261234 wurde am 18.11. aufgegeben und wird am 3.12. zugestellt.",
     ["ORD"], "ORD-20261234?"),
    ("de-placed-and-due-weekday", None, "Ihre Bestellung ORD-20261234 wurde am 18.11.2026 aufgegeben und wird am "
     "Donnerstag, 3.12., zugestellt.", ["ORD"], "ORD-20261234?"),
    ("shipping-threshold", None, "Shipping is free for orders over €50.", ["ORD"], "ORD-20261234?"),
    ("de-shipping-threshold", None, "Der Versand ist für Bestellungen ab 50 EUR kostenlos.", ["ORD"], "ORD-20261234?"),
    ("de-price-perfect-right", None, "Der USB-Lizenzschlüssel hat 25,00 gekostet, das Handbuch 15,00.", ["ORD"],
     "ORD-20261234?"),
    ("de-weight-not-price", None, "Das Paket ORD-20261234 hat 1,50 kg und ist unterwegs.", ["ORD"], "ORD-20261234?"),
    ("customer-number", None, "Your customer number is KD12345678; order GH56JK78MN is waiting for payment.", ["GH"],
     "GH56JK78MN?"),
    ("de-invoice-number", None, "Ihre Rechnungsnummer ist RE20261234.", ["GH"], "GH56JK78MN?"),
]


# an adversarial pass's promises in other words (stop 48), each of a class the floor now reads
PROMISES_48 = [
    "You will see the charge reversed on your statement.", "We've issued a chargeback in your favour.",
    "I've applied a 15% reduction to your next purchase.", "I've cancelled the late fee.",
    "The late fee has been removed from your account.", "We have written off the outstanding balance.",
    "I've arranged for your payment to be sent back.", "We'll make it right with a gift card.",
    "Your card will not be billed.", "Den Betrag buchen wir auf Ihre Karte zurück.",
    "Als Entschädigung schenken wir Ihnen einen Monat.", "Die Gebühr entfällt für Sie.", "Wir verzichten auf die Mahngebühr.",
    "Wir erlassen Ihnen die Kosten.", "Das geht aufs Haus.", "Sie erhalten ein kostenloses Upgrade.",
    "Der Kaufpreis wird Ihnen rückvergütet.", "Die Lastschrift wird zurückgebucht.", "Wir leiten die Erstattung heute in die Wege.",
    "Erstattet!", "Sie werden entschädigt.", "Wir kommen Ihnen mit einem Preisnachlass entgegen.",
    "Wir stellen Ihnen die Bestellung nicht in Rechnung.", "Die Rechnung wird storniert.",
    "You asked for a refund, and that's approved.", "You asked for a full refund — consider it done.",
    "Sie baten um eine Erstattung – das ist erledigt.",
    # the seventh labelled pass (bench/data/grounding_blind4.jsonl): a subject after the verb
    "Die Bearbeitungsgebühr erlassen wir Ihnen selbstverständlich.", "Auf die Mahngebühr verzichten wir.",
]
NOT_PROMISES_48 = [
    "We cannot waive the late fee, but a colleague will review it.", "Whether the fee can be removed is for a colleague to decide.",
    "Wir prüfen, ob wir auf die Gebühr verzichten können.", "If the payment fails, your card will not be charged.",
    "The reduction in delivery times is good news.", "Die Rechnung wird Ihnen nach der Zuordnung zugeschickt.",
    "Ich habe Ihre Anfrage an die Buchhaltung weitergegeben; das ist erledigt.", "We will look into whether a refund is possible.",
    "There is nothing to pay until the order ships.", "You asked whether a refund is possible; a colleague decides that.",
    # the review's false alarms: a fact of a paid order, and a shipping policy
    "Your order is paid in full, so there is nothing left to pay.", "Die Versandkosten entfallen ab 50 EUR.",
]


RESULTS.setdefault("CANC", {"found": True, "order_code": "CN12CN34CN", "status": "cancelled", "status_detail": "cancelled",
                            "product": "NoteTidy Pro", "placed_on": "2026-11-10", "estimated_delivery": None,
                            "license_issued": False})
_Q48 = {"GH": "GH56JK78MN?", "ORD": "ORD-20261234?", "DELIV": "ORD-20260001?", "AWAIT": "AW12AW34AW?", "CANC": "CN12CN34CN?"}
# an adversarial pass's wrong statuses (stop 48): each said of an order whose lookup says otherwise
STATUSES_48 = [
    ("We've sent your order GH56JK78MN.", "GH"), ("GH56JK78MN: shipped ✓", "GH"),
    ("Wir haben Ihre Bestellung GH56JK78MN heute losgeschickt.", "GH"), ("Payment status: matched.", "GH"),
    ("Your payment for GH56JK78MN is complete.", "GH"), ("We have assigned your payment to the order.", "GH"),
    ("Die Bestellung GH56JK78MN ist beglichen.", "GH"), ("We have your payment for AW12AW34AW.", "AWAIT"),
    ("Your order ORD-20260001 is still in transit.", "DELIV"), ("Your order ORD-20260001 has not yet arrived.", "DELIV"),
    ("Ihre Bestellung ORD-20260001 ist noch unterwegs.", "DELIV"), ("Our records show ORD-20261234 as delivered.", "ORD"),
    ("The carrier confirmed delivery of ORD-20261234.", "ORD"), ("Your order ORD-20261234 is still awaiting dispatch.", "ORD"),
    ("Ihre Bestellung ORD-20261234 wartet noch auf den Versand.", "ORD"), ("Your order CN12CN34CN is being processed.", "CANC"),
    ("Ihre Bestellung CN12CN34CN wird bearbeitet.", "CANC"),
]
# the same words said of an order they are true of
TRUE_STATUSES_48 = [
    ("Your order ORD-20261234 is still in transit.", "ORD"), ("We have your payment for GH56JK78MN; it is not yet matched.", "GH"),
    ("Your order GH56JK78MN is still awaiting dispatch: the payment is not matched yet.", "GH"),
    ("Your order GH56JK78MN is being processed.", "GH"), ("Ihre Bestellung ORD-20261234 ist noch unterwegs.", "ORD"),
    ("Our records show ORD-20261234 as shipped.", "ORD"), ("We've sent your order ORD-20261234.", "ORD"),
    ("Payment status: received, not yet matched.", "GH"), ("The carrier confirmed delivery of ORD-20260001.", "DELIV"),
    ("We will send your order as soon as the payment is matched.", "GH"), ("Wir haben Ihre Bestellung noch nicht verschickt.", "GH"),
]


@pytest.mark.parametrize("draft, key", STATUSES_48)
def test_wrong_statuses_of_stop_48_are_flagged(draft, key):
    assert "status_mismatch" in [f.kind for f in run("", draft, [lookup(key)], _Q48[key]) if f.severity == "error"]


@pytest.mark.parametrize("draft, key", TRUE_STATUSES_48)
def test_the_same_words_of_an_order_they_are_true_of_are_not(draft, key):
    assert [f.to_dict() for f in run("", draft, [lookup(key)], _Q48[key]) if f.severity == "error"] == []


@pytest.mark.parametrize("draft", PROMISES_48)
def test_promises_in_other_words_of_stop_48_are_flagged(draft):
    assert "forbidden_promise" in [f.kind for f in run("", draft, [lookup("GH")], "GH56JK78MN?") if f.severity == "error"]


@pytest.mark.parametrize("draft", NOT_PROMISES_48)
def test_their_hedged_and_unrelated_neighbours_are_not(draft):
    assert "forbidden_promise" not in [f.kind for f in run("", draft, [lookup("GH")], "GH56JK78MN?")]


@pytest.mark.parametrize("case", FLAG, ids=[c[0] for c in FLAG])
def test_issue_examples_are_flagged(case):
    _, answer, draft, lookups, question, kind = case
    found = run(answer or "", draft, _l(lookups), question)
    assert kind in [f.kind for f in found], [f.to_dict() for f in found]


@pytest.mark.parametrize("case", CLEAN, ids=[c[0] for c in CLEAN])
def test_correct_drafts_are_not_flagged(case):
    _, answer, draft, lookups, question = case
    found = run(answer or "", draft, _l(lookups), question)
    assert [f.to_dict() for f in found if f.severity == "error"] == []


@pytest.mark.parametrize("text,want", [("r\u0435fund", "refund"), ("re\u00adfund", "refund"), ("2026\u201112\u201124", "2026-12-24"),
                                       ("\uff27\uff28\uff15\uff16", "GH56"), ("\x1b[31mok\x1b[0m", "ok"), ("we\u2019ll", "we'll"),
                                       ("r\u200be\u2060fund", "refund"), ("\u0441\u0440\u043e\u0440", "\u0441\u0440\u043e\u0440")])
def test_fold(text, want):
    assert fold(text) == want


@pytest.mark.parametrize("text,want", [
    ("re\x00fund", "refund"), ("re\x7ffund", "refund"), ("re\x08fund", "refund"), ("re\rfund", "refund"),
    ("re\x85fund", "re\x85fund"), ("line\r\nnext", "line\r\nnext"),          # NEL and CRLF end lines
    ("re<b></b>fund", "refund"), ('we <span class="x">refund</span>', "we refund"), ("<!-- x -->refund", "refund"),
    ("re&shy;fund", "refund"), ("re&#8203;fund", "refund"), ("re&#x200B;fund", "refund"),
    ("AT&T, R&D &not here", "AT&T, R&D &not here"), ("if a < b and c > d", "if a < b and c > d"),
    ("**re**fund", "refund"), ("re--fund", "refund"), ("can~~celled", "cancelled"), ("credit--card", "credit--card"),
])
def test_fold_reads_controls_html_and_markup_inside_a_word(text, want):
    """What a mail or a rich-text editor leaves inside a word shows as nothing to a reader."""
    assert fold(text) == want


@pytest.mark.parametrize("draft, lookup_key, kind", [
    ("Sie erhalten eine Rueckerstattung.", "GH", "forbidden_promise"),
    ("Wir ueberweisen Ihnen den Betrag zurueck.", "GH", "forbidden_promise"),
    ("Die Lizenz fuer GH56JK78MN wurde ausgestellt.", "GH", "license_mismatch"),
    ("Ihre Bestellung ORD-20261234 enthaelt zwei USB-Schluessel.", "ORD", "line_items_mismatch"),
])
def test_german_written_without_umlauts_is_checked_as_with_them(draft, lookup_key, kind):
    q = "GH56JK78MN?" if lookup_key == "GH" else "ORD-20261234?"
    assert kind in [f.kind for f in run("", draft, [lookup(lookup_key)], q) if f.severity == "error"]


@pytest.mark.parametrize("draft, lookup_key, kind", [
    ("Hello,\n\nbecause of the delay we will\nrefund the full amount of your order GH56JK78MN.", "GH", "forbidden_promise"),
    ("Hallo,\n\nwir werden Ihnen den vollen\nBetrag erstatten.", "GH", "forbidden_promise"),
    ("We will\nrefund you\nin full.", "GH", "forbidden_promise"),
    ("Ihre Bestellung GH56JK78MN wurde\nbereits versandt.", "GH", "status_mismatch"),
])
def test_a_claim_a_hard_wrap_cut_across_two_lines_is_read_whole(draft, lookup_key, kind):
    """A mail program's hard wrap ends a line, not a sentence: the claim goes on on the next."""
    assert kind in [f.kind for f in run("", draft, [lookup(lookup_key)], "GH56JK78MN?") if f.severity == "error"]


@pytest.mark.parametrize("draft", [
    "Your orders:\n- GH56JK78MN: waiting for payment\n- a refund is not possible",
    "Hello Ana,\nyour order GH56JK78MN is waiting for payment.\nBest regards,\nCustomer Support",
    "Order GH56JK78MN\nStatus: pending_payment",
])
def test_lines_of_a_list_or_a_letter_stay_what_they_say(draft):
    assert [f.to_dict() for f in run("", draft, [lookup("GH")], "GH56JK78MN?") if f.severity == "error"] == []


@pytest.mark.parametrize("draft", [
    "We will re\x00fund you in full.", "We will re\rfund you in full.", "We will re<b></b>fund you in full.",
    "We will re&shy;fund you in full.", "We will re&#8203;fund you in full.", "We will **re**fund you in full.",
    "Wir werden Ihnen den Betrag er<i></i>statten.",
])
def test_a_promise_hidden_by_a_control_html_or_markup_is_flagged(draft):
    assert "forbidden_promise" in [f.kind for f in run("", draft, [lookup("GH")], "GH56JK78MN?")
                                   if f.severity == "error"]


@pytest.mark.parametrize("text", ["\u200b", "\x1b[0m", "\u2800", "\u3164", "-", "", "\u2014 \u00ad"])
def test_nothing_visible(text):
    assert not has_words(text)


def test_the_delivery_date_is_not_read_as_the_order_date():
    text = "Your order ORD-20261234 was placed on 2026-11-18, shipped, and is due on 2026-12-03."
    claims, complete = extract(text, Known())
    dates = [(c.what, sorted(c.value)) for c in claims if c.kind == "date"]
    assert complete and dates == [("placed", [(2026, 11, 18)]), ("delivery", [(2026, 12, 3)])]


def test_a_status_quoted_from_the_detail_is_checked_against_the_status():
    found = run("", "The note on your order says: \"Your order has been shipped.\"", _l(["QUOTED_STATUS"]), "QS12QS34QS?")
    [f] = [f for f in found if f.kind == "status_mismatch"]
    assert f.evidence["tool_result"]["status"] == "pending_payment"


def test_a_run_on_answer_is_read_whole_and_a_longer_one_is_not_fully_checked():
    unit = "your order GH56JK78MN has shipped and the license has been issued and "
    s = (unit * 300)[:19_000]
    found = check_ticket(answer=s, drafts=[], tool_results=[lookup("GH")], questions=["GH56JK78MN?"])
    assert {"status_mismatch", "license_mismatch"} <= {f.kind for f in found}
    assert "not_fully_checked" not in {f.kind for f in found}
    found = check_ticket(answer=unit * 400, drafts=[], tool_results=[lookup("GH")], questions=["GH56JK78MN?"])
    [nf] = [f for f in found if f.kind == "not_fully_checked"]
    assert nf.severity == "warning" and nf.evidence["where"] == "answer"


@pytest.mark.parametrize("unit", ["1/1 ", "1.1. ", "am 1. ", "1.1.2026 ", "on the 1st. "])
def test_dense_dates_are_found_in_linear_time(unit):
    # a customer's question (20,000 characters, not cut in pieces) of short dates: the overlap test
    # of each date against every date before it was quadratic (a 20,000-character "1/1 1/1 ..."
    # question cost ~2 s of the 5 s budget); 200,000 characters would take minutes, and the timeout ends it
    from agentcli.checks.claims import find_dates
    text = (unit * (200_000 // len(unit) + 1))[:200_000]
    assert len(find_dates(text)) > 200_000 // len(unit) // 2


@pytest.mark.parametrize("unit", ["vs. 3. ", "no. 3. ", "den 3. ", "ca. 24. "])
def test_a_promise_after_a_run_of_full_stops_is_found_within_the_budget(unit):
    """At every full stop the sentence splitter asks whether an abbreviation or a day stands
    before it and a month after it; each asked the whole text for its needles, so a 19,000-
    character run of "vs. 3. " cost ~2.8 s of CPU (quadratic) and a promise behind it was lost
    to the 5 s budget as not_fully_checked. Each asks its window now."""
    from tests.test_checks import saved

    answer = (unit * 2900)[:19_990]
    draft = (unit * 2700)[:19_000] + " We will refund you in full."
    found = check_ticket(answer=answer, drafts=[{"id": DID, "text": draft}],
                         tool_results=[lookup("GH"), saved(draft)], questions=["GH56JK78MN?"], budget_s=5.0)
    kinds = {(f.kind, f.severity) for f in found}
    assert ("forbidden_promise", "error") in kinds and ("not_fully_checked", "warning") not in kinds


@pytest.mark.parametrize("n", range(88, 116, 3))
def test_a_claim_the_cut_of_a_long_sentence_goes_through_is_read_whole(n):
    """A run-on sentence is read in pieces of at most 400 characters; a piece is read with the
    sentence's words on either side, so "we will | refund you in full" cut at 400 is still a
    promise (it was lost at lengths 413-438), and found once."""
    draft = "Hello " + "and " * n + "we will refund you in full."
    found = [f.kind for f in run("", draft, [lookup("GH")], "GH56JK78MN?") if f.severity == "error"]
    assert found == ["forbidden_promise"]


def test_a_spent_budget_is_not_fully_checked_never_ok():
    found = check_ticket(answer="Your order GH56JK78MN is waiting for payment.", drafts=[{"id": DID, "text": "Hello."}],
                         tool_results=[lookup("GH")], questions=["GH56JK78MN?"], budget_s=1e-9)
    assert {(f.kind, f.severity) for f in found} == {("not_fully_checked", "warning")}


def test_a_text_that_nfkc_lengthens_is_bounded():
    s = "\ufdfa" * 30_000  # one character, eighteen letters once folded
    assert len(fold(s, limit=20_001)) == 20_001
    found = check_ticket(answer=s, drafts=[], tool_results=[lookup("GH")], questions=["GH56JK78MN?"])
    assert [f.kind for f in found] == ["not_fully_checked"]


# ---- novel phrasings of every class (tests/floor_probes.py): the floor is fixed by class, and
# other members of each class are tried here, with correct texts of the same shapes that must stay clean.
from tests import floor_probes as _fp  # noqa: E402


@pytest.mark.parametrize("case", _fp.FLAG + _fp.ANSWER_FLAG, ids=[c[0] for c in _fp.FLAG + _fp.ANSWER_FLAG])
def test_novel_phrasings_are_flagged(case):
    _, text, k, kind = case
    found = _fp._run(text, k, "answer" if kind == _fp.DR else "draft")
    assert kind in [f.kind for f in found if f.severity == "error"], [f.to_dict() for f in found]


@pytest.mark.parametrize("case", _fp.CLEAN, ids=[c[0] for c in _fp.CLEAN])
def test_novel_correct_texts_stay_clean(case):
    _, text, k = case
    found = _fp._run(text, k)
    assert [f.to_dict() for f in found if f.severity == "error"] == []


@pytest.mark.parametrize("text,want", [("We will R E F U N D you.", "We will REFUND you."), ("r.e.f.u.n.d", "refund"),
                                       ("re-fund", "refund"), ("can-celled", "cancelled"), ("credit-card", "credit-card"),
                                       ("e-mail", "e-mail"), ("E R S T A T T E T", "ERSTATTET"), ("e.g. the", "e.g. the"),
                                       ("KL12-MN34-PQ", "KL12-MN34-PQ"), ("USB-KEY", "USB-KEY")])
def test_fold_joins_spelled_and_cut_words(text, want):
    assert fold(text) == want


@pytest.mark.parametrize("text,want", [("due on the 24th.", {(None, 0, 24)}), ("am vierundzwanzigsten Dezember", {(None, 12, 24)}),
                                       ("am 24. geliefert", {(None, 0, 24)}), ("by the twentieth.", {(None, 0, 20)}),
                                       ("am 24ten Dezember", {(None, 12, 24)}), ("am einunddreißigsten Mai", {(None, 5, 31)})])
def test_day_only_and_german_ordinal_dates(text, want):
    claims, _ = extract(text, Known())
    assert {c for x in claims if x.kind == "date" for c in x.value} == want


@pytest.mark.parametrize("text", ["the second time", "zum ersten Mal", "on the first attempt", "the 24th floor"])
def test_ordinals_that_are_not_dates(text):
    claims, _ = extract(text, Known())
    assert [c for c in claims if c.kind == "date"] == []
