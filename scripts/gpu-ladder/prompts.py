# ruff: noqa: E501  (the prompts are data: one request a line)
"""The ladder's prompts: sixteen short requests of the kinds a serving team sees (code, prose,
support, data), each of a few dozen to a hundred-odd tokens with the kit's tokenizer. The same
text seeds build_models.py's agreement search and ladder_load.py's requests."""

PROMPTS = [
    ("code-argparse", "def parse_args(argv=None):\n    \"\"\"Parse the command line of the nightly export job.\"\"\"\n    parser = argparse.ArgumentParser(description='Export yesterday\\'s orders to the warehouse')\n    parser.add_argument('--since', type=str, help='first day to export, YYYY-MM-DD')\n    parser.add_argument('--dry-run', action='store_true')\n"),
    ("code-class", "class RateLimiter:\n    \"\"\"Token bucket: `rate` tokens a second, at most `burst` at once.\"\"\"\n\n    def __init__(self, rate, burst):\n        self.rate = rate\n        self.burst = burst\n        self.tokens = burst\n        self.updated = time.monotonic()\n\n    def allow(self):\n"),
    ("code-test", "import unittest\n\nclass TestInvoiceTotals(unittest.TestCase):\n    def test_discount_applies_before_tax(self):\n        invoice = Invoice(lines=[Line('widget', 3, 9.99)], discount=0.1, tax=0.2)\n        self.assertAlmostEqual(invoice.total(), 32.37, places=2)\n\n    def test_empty_invoice(self):\n"),
    ("code-sql", "-- Monthly active users by plan, last twelve months\nSELECT date_trunc('month', e.created_at) AS month,\n       a.plan,\n       count(DISTINCT e.user_id) AS active_users\nFROM events e\nJOIN accounts a ON a.id = e.account_id\nWHERE e.created_at >= now() - interval '12 months'\n"),
    ("prose-story", "Once upon a time, in a small village by the sea, there lived an old clockmaker who had never once been late. Every morning he opened his shop at seven, wound the great clock in the square, and"),
    ("prose-essay", "The history of the printing press is usually told as a story about books, but its first and largest effect was on paperwork. Within fifty years of Gutenberg, presses across Europe were turning out"),
    ("prose-letter", "Dear Ms. Alvarez,\n\nThank you for your letter of March 4th about the delayed shipment of your order. I have looked into what happened, and I would like to explain"),
    ("prose-news", "Officials said on Tuesday that the city's new water treatment plant, which cost more than the original estimate by a third, will begin operating next spring after"),
    ("support-ticket", "Customer: Hi, I upgraded to the Pro plan yesterday but my dashboard still shows the old limits and I can't invite more than five people to the workspace. I already tried logging out and back in.\nAgent:"),
    ("support-howto", "Question: How do I rotate the TLS certificate on the load balancer without dropping connections? We run two instances behind DNS and the certificate expires on Friday.\nAnswer:"),
    ("data-json", "{\"order_id\": 88123, \"customer\": {\"name\": \"Jonas Berg\", \"email\": \"jonas@example.com\"}, \"items\": [{\"sku\": \"A-1002\", \"qty\": 2, \"price\": 14.5}, {\"sku\": \"B-2210\", \"qty\": 1, \"price\": 99.0}], \"status\":"),
    ("data-csv", "date,region,product,units,revenue\n2026-01-02,north,widget,120,1438.80\n2026-01-02,south,widget,98,1175.02\n2026-01-02,north,gadget,44,2195.56\n2026-01-03,north,widget,131,"),
    ("log-trace", "Traceback (most recent call last):\n  File \"/srv/app/worker.py\", line 212, in run\n    result = handler(job)\n  File \"/srv/app/handlers.py\", line 88, in resize\n    image = Image.open(path)\nFileNotFoundError: [Errno 2] No such file or directory: '/data/uploads/"),
    ("config-yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: checkout\n  labels:\n    app: checkout\nspec:\n  replicas: 3\n  selector:\n    matchLabels:\n      app: checkout\n  template:\n"),
    ("summary", "Summarize the following meeting notes in three bullet points.\n\nNotes: The team agreed to move the release to the 14th because the migration script failed on the staging copy of the orders table. Priya will rerun it with the index dropped first."),
    ("translate", "Translate into French: The train to the airport leaves every twenty minutes from platform four, but on Sundays the first train is at seven thirty and tickets must be bought before boarding."),
]
