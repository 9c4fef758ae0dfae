#!/usr/bin/env bash
# tests/e2e/test_scaling_cli.sh: `ddpc scaling fit` and `ddpc scaling plan` (issue 16, IsoFLOPs). The fit
# reads a small runs file in the seeds' format (3 budgets x 5 sizes 0.3 decades apart, the losses of
# L = 1.69 + 406.4/N^0.34 + 410.7/D^0.28 with D = C/(6N), rounded; its optimum goes as C^0.4516), prints a
# row per budget and the two laws, extrapolates to 1e23 and 1e24, and writes three well-formed SVGs; a
# runs entry may name a ddprun metrics file instead of its loss; bad input is one line and exit 1, a bad command line exit 2. The plan writes schedules that build/ddpc compiles, whose
# parameter count (the plan's meta) is the one runs.json states and whose steps spend the budget.
. "$(dirname "$0")/lib.sh"
e2e_tmp scaling_cli
cat >"$tmp/runs.json" <<'JSON'
[
 {"parameters": 8e6, "compute_budget": 1e17, "final_loss": 4.5276},
 {"parameters": 1.6e7, "compute_budget": 1e17, "final_loss": 4.3602},
 {"parameters": 3.2e7, "compute_budget": 1e17, "final_loss": 4.3196},
 {"parameters": 6.4e7, "compute_budget": 1e17, "final_loss": 4.3990},
 {"parameters": 1.3e8, "compute_budget": 1e17, "final_loss": 4.6028},
 {"parameters": 2.3e7, "compute_budget": 1e18, "final_loss": 3.6787},
 {"parameters": 4.5e7, "compute_budget": 1e18, "final_loss": 3.5655},
 {"parameters": 9e7, "compute_budget": 1e18, "final_loss": 3.5364},
 {"parameters": 1.8e8, "compute_budget": 1e18, "final_loss": 3.5914},
 {"parameters": 3.6e8, "compute_budget": 1e18, "final_loss": 3.7297},
 {"parameters": 6.4e7, "compute_budget": 1e19, "final_loss": 3.0892},
 {"parameters": 1.3e8, "compute_budget": 1e19, "final_loss": 3.0055},
 {"parameters": 2.6e8, "compute_budget": 1e19, "final_loss": 2.9868},
 {"parameters": 5.1e8, "compute_budget": 1e19, "final_loss": 3.0253},
 {"parameters": 1e9, "compute_budget": 1e19, "final_loss": 3.1190}
]
JSON
"$DDPC" scaling fit "$tmp/runs.json" --budgets 1e23,1e24 --svg-dir "$tmp/svg" >"$tmp/out" 2>"$tmp/err" ||
  die "fit failed: $(cat "$tmp/err")"
cat "$tmp/out"
[ "$(grep -c ' parabola$' "$tmp/out")" = 3 ] || fail "expected 3 budgets fitted by a parabola"
grep -q '^N_opt(C) = .* C^0\.45[0-9]* ' "$tmp/out" || fail "N_opt exponent not the law's 0.45"
grep -q '^D_opt(C) = .* C^0\.54[0-9]* ' "$tmp/out" || fail "D_opt exponent not the law's 0.548"
[ "$(grep -c '(extrapolated)$' "$tmp/out")" = 2 ] || fail "expected the 2 extrapolations"
grep -q '^1e+23 ' "$tmp/out" && grep -q '^1e+24 ' "$tmp/out" || fail "1e23 and 1e24 rows missing"
for f in isoflops n_opt d_opt; do
  [ -s "$tmp/svg/$f.svg" ] || { fail "no $f.svg"; continue; }
  python3 -c "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); assert d.documentElement.tagName == 'svg'; \
assert d.getElementsByTagName('circle') and d.getElementsByTagName('text')" "$tmp/svg/$f.svg" ||
    fail "$f.svg is not well-formed SVG with points and labels"
done
[ "$(grep -c '<polyline' "$tmp/svg/isoflops.svg")" = 3 ] || fail "isoflops.svg: expected 3 parabolas"

# A run given by its ddprun metrics file (the loss of the last step line).
printf '{"event": "memory", "rank": 0}\n{"step": 1, "loss": 9.0}\n{"step": 2, "loss": 4.3196}\n' >"$tmp/m.jsonl"
sed 's/"final_loss": 4.3196/"metrics": "m.jsonl"/' "$tmp/runs.json" >"$tmp/runs_m.json"
"$DDPC" scaling fit "$tmp/runs_m.json" >"$tmp/out_m" 2>"$tmp/err" || fail "fit with a metrics file: $(cat "$tmp/err")"
diff <(head -4 "$tmp/out") <(head -4 "$tmp/out_m") >/dev/null || fail "the metrics file's loss was not used"

# Bad input: one line naming the run and field, exit 1; bad command lines exit 2.
bad() { # bad STATUS WANT ARGS...: ddpc scaling ARGS exits STATUS with one line holding WANT
  local want_rc=$1 want=$2 rc
  shift 2
  "$DDPC" scaling "$@" >/dev/null 2>"$tmp/err"
  rc=$?
  [ "$rc" = "$want_rc" ] || fail "ddpc scaling $*: exit $rc, expected $want_rc"
  [ "$(wc -l <"$tmp/err")" = 1 ] && grep -qF -- "$want" "$tmp/err" || fail "ddpc scaling $*: said '$(cat "$tmp/err")'"
}
echo '{"runs": []}' >"$tmp/obj.json"
echo '[{"parameters": 1e8, "compute_budget": 1e18}]' >"$tmp/noloss.json"
echo '[{"parameters": 1e8, "compute_budget": -1e18, "final_loss": 3}]' >"$tmp/neg.json"
echo '[{"parameters": 1e8, "compute_budget": 1e18, "final_loss": 3}, {"parameters": 2e8, "compute_budget": 1e18, "final_loss": 2.9}]' >"$tmp/one.json"
bad 1 "not a JSON array" fit "$tmp/obj.json"
printf '[{"a": "\\\n"}]' >"$tmp/escape_nl.json" # a bad escape before a newline: jansson quotes the newline
bad 1 "escape_nl.json: line 2: not JSON: invalid escape near" fit "$tmp/escape_nl.json"
bad 1 'run 0: the field "final_loss" (or "metrics") is missing' fit "$tmp/noloss.json"
bad 1 'run 0: "compute_budget" is -1e+18' fit "$tmp/neg.json"
bad 1 "at least 2 budgets" fit "$tmp/one.json"
bad 1 "no-such.json" fit "$tmp/no-such.json"
bad 2 "no runs file given" fit
bad 2 "--budgets" fit "$tmp/runs.json" --budgets 1e23,abc
bad 2 "unknown option" fit "$tmp/runs.json" --bogus
bad 2 "no --budgets given" plan -o "$tmp/p"
bad 2 "unknown subcommand" frobnicate
rm -rf "$tmp/p"
"$DDPC" scaling plan --budgets 1e20,1e6 -o "$tmp/p" >"$tmp/p.out" 2>/dev/null
bad 1 "cannot train one step" plan --budgets 1e20,1e6 -o "$tmp/p"
[ ! -e "$tmp/p" ] || fail "a refused plan made its folder $tmp/p"
[ ! -s "$tmp/p.out" ] || fail "a refused plan printed its table: $(cat "$tmp/p.out")"
bad 2 "--budgets: 1e+18 is given twice" plan --budgets 1e18,1e18 -o "$tmp/p"
bad 2 "--tokens: a file name with a quote, a backslash or a control character is refused" plan --budgets 1e18,1e19 \
  --tokens 'a\tb.bin' -o "$tmp/p"
bad 2 "--tokens: a file name with a quote, a backslash or a control character is refused" plan --budgets 1e18,1e19 \
  --tokens "$(printf 'a\nb.bin')" -o "$tmp/p"
bad 2 "--budgets: an empty item in '1e18,,1e19'" plan --budgets 1e18,,1e19 -o "$tmp/p"
bad 1 "the power laws need at least 2 budgets" fit "$tmp/one.json" --svg-dir "$tmp/nosvg"
[ ! -e "$tmp/nosvg" ] || fail "a refused fit made its --svg-dir"
# a --svg-dir that cannot be made, or is a file, is refused before the fit is printed
"$DDPC" scaling fit "$tmp/runs.json" --svg-dir "$tmp/no/such" >"$tmp/svgbad.out" 2>"$tmp/err"
[ $? = 1 ] && grep -qE -- "^ddpc scaling fit: --svg-dir .*no/such: its folder .*/no does not exist$" "$tmp/err" &&
  [ ! -s "$tmp/svgbad.out" ] || fail "--svg-dir in a missing folder: $(cat "$tmp/err") / $(head -2 "$tmp/svgbad.out")"
bad 1 "--svg-dir: $tmp/runs.json is not a folder" fit "$tmp/runs.json" --svg-dir "$tmp/runs.json"
"$DDPC" scaling --help | grep -q '^usage: ddpc scaling fit' || fail "ddpc scaling --help"
"$DDPC" --help | grep -q 'ddpc scaling fit|plan' || fail "ddpc --help does not list scaling"

# The plan: 2 budgets x 3 sizes of a small transformer; each schedule compiles, with the stated size.
"$DDPC" scaling plan --budgets 1e13,1e14 --sizes 3 --vocab 256 --context 32 --batch 8 --precision fp32 \
  -o "$tmp/plan" >"$tmp/plan.out" 2>"$tmp/err" || die "plan failed: $(cat "$tmp/err")"
cat "$tmp/plan.out"
n=0
for f in "$tmp"/plan/isoflops_*.lua; do
  "$DDPC" "$f" -o "${f%.lua}.bin" -q 2>"$tmp/err" || { fail "$(basename "$f") does not compile: $(cat "$tmp/err")"; continue; }
  "$DDPC" inspect "${f%.lua}.bin" --json >"$tmp/meta.json" || { fail "inspect $(basename "$f")"; continue; }
  python3 - "$tmp/meta.json" "$tmp/plan/runs.json" "$(basename "$f")" <<'PY' || fail "$(basename "$f"): size or budget differ"
import json, sys
meta = json.load(open(sys.argv[1]))["meta"]
run = [r for r in json.load(open(sys.argv[2])) if r["schedule"] == sys.argv[3]][0]
tokens = meta["steps"] * meta["global_batch"] * meta["context"]
spent = 6 * meta["n_params"] * tokens
print(f'{sys.argv[3]}: {meta["n_params"]} parameters (runs.json {run["parameters"]}), 6ND = {spent:.4g} of {run["compute_budget"]:.4g}')
assert meta["n_params"] == run["parameters"]
assert abs(spent / run["compute_budget"] - 1) < 0.01
PY
  n=$((n + 1))
done
[ "$n" = 6 ] || fail "expected 6 compiled schedules, got $n"
exit $fail
