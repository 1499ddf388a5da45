"""Evaluates accountd's alert rules on one scrape of its metrics, as Prometheus would at
one instant (ignoring `for:`), and prints the alerts that fire, one a line.

    python3 check-alerts.py RULES.yml METRICS.prom [--now SECONDS] [--threshold ALERT=NUMBER ...]

The metrics are read with prometheus_client's parser. An expression is
`[time() - ]METRIC{LABEL="v", LABEL=~"re"} OP NUMBER` (OP one of > < >= <= == !=), the
one form config/prometheus/accountd-alerts.yml uses; --threshold replaces an alert's
NUMBER (a test cannot wait 15 minutes for a migration to be stuck).
"""
import argparse
import operator
import re
import sys
import time

from prometheus_client.parser import text_string_to_metric_families

OPS = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne}
EXPR = re.compile(r'^(time\(\)\s*-\s*)?([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s*(>=|<=|==|!=|>|<)\s*([-+0-9.eE]+)$')
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')


def rules(path):
    """(alert, expr) pairs, read line by line: `- alert: NAME` then `expr: EXPR`."""
    found, name = [], None
    for line in open(path):
        line = line.strip()
        if line.startswith("- alert:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("expr:") and name:
            found.append((name, line.split(":", 1)[1].strip()))
            name = None
    return found


def matches(labels, selector):
    for key, op, value in MATCHER.findall(selector or ""):
        have = labels.get(key, "")
        if op == "=" and have != value:
            return False
        if op == "!=" and have == value:
            return False
        if op == "=~" and not re.fullmatch(value, have):
            return False
    return True


def fires(expr, samples, now, threshold=None):
    parsed = EXPR.match(expr)
    if not parsed:
        sys.exit("cannot evaluate %r: use [time() - ]METRIC{LABELS} OP NUMBER" % expr)
    minus_time, name, selector, op, number = parsed.groups()
    limit = float(threshold if threshold is not None else number)
    for sample_name, labels, value in samples:
        if sample_name == name and matches(labels, (selector or "{}")[1:-1]):
            if OPS[op]((now - value) if minus_time else value, limit):
                return True
    return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("rules")
    parser.add_argument("metrics")
    parser.add_argument("--now", type=float, default=time.time())
    parser.add_argument("--threshold", action="append", default=[])
    args = parser.parse_args()
    thresholds = dict(item.split("=", 1) for item in args.threshold)
    samples = [(s.name, s.labels, s.value) for family in text_string_to_metric_families(open(args.metrics).read()) for s in family.samples]
    for name, expr in rules(args.rules):
        if fires(expr, samples, args.now, thresholds.get(name)):
            print(name)


if __name__ == "__main__":
    main()
