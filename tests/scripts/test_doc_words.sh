#!/usr/bin/env bash
# The product's documents speak of the product: README.md, BENCHMARKS.md,
# everything under docs/, tests/README.md and every src/*/README.md must not
# speak of the work that made them (work sessions, device time, machines
# lent, coordinators, calls withheld "for" someone). Prints file:line: text
# for each offending line and fails. The same check is first run on planted
# text, so the pattern itself is tested: each forbidden phrase must be
# found, and the legitimate uses below must not be.
#
# Legitimate uses of "session" (a PyTorch session, a TCP or SSH session) are
# allowed by name; any other use of the word is refused, so reword it.
#
# usage: bash tests/scripts/test_doc_words.sh [<build-dir>]  (build dir unused)
set -u
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$src/tests/scripts/lib/tally.sh"

ordinals='this|that|last|next|earlier|later|previous|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|each|every|one|same|whole'
allowed='(?<!pytorch )(?<!tcp )(?<!ssh )(?<!login )(?<!tls )'
pattern="\\b($ordinals)\\s+sessions?\\b|${allowed}\\bsessions?\\b|device[- ]time\\b|\\blent\\b|\\blending\\b|coordinator|\\bwithheld\\b|other sessions|other helpers"

# doc_words FILE...: the offending lines as file:line: text (relative paths).
doc_words() {
  (cd "$src" && grep -HniIP "$pattern" "$@")
}

# The pattern on planted text: every line of bad.md must be found, no line
# of good.md.
mkdir -p "$tmp/plant"
cat >"$tmp/plant/bad.md" <<'EOF'
Measured in the eighth session on one H200.
Taken while other sessions' builds ran.
Two sessions later the number moved.
A 2-GPU machine was withheld.
Only one GPU was lent, so ranks share it.
Out of device time before the second run.
The recipe, for the coordinator.
The Session of 2026-12-01.
Lending ended early.
EOF
cat >"$tmp/plant/good.md" <<'EOF'
Start a PyTorch session with two ranks.
Each TCP session carries one link; an SSH session starts the job.
The lenticular plot, a silent rank, excellent bandwidth.
The device times each call (time on the device, per call).
EOF
bad=$(grep -ciP "$pattern" "$tmp/plant/bad.md")
[ "$bad" = "$(wc -l <"$tmp/plant/bad.md")" ]
check $? "the pattern finds every planted phrase ($bad of $(wc -l <"$tmp/plant/bad.md") lines)"
good=$(grep -niP "$pattern" "$tmp/plant/good.md")
[ -z "$good" ]
check $? "the pattern leaves legitimate uses alone: $good"

cd "$src" || exit 1
files=(README.md BENCHMARKS.md tests/README.md)
for f in src/*/README.md; do files+=("$f"); done
while IFS= read -r f; do files+=("$f"); done < <(find docs -type f ! -name '*.png' ! -name '*.svg' | sort)
for f in "${files[@]}"; do
  [ -f "$f" ]; check $? "$f exists"
done
hits=$(doc_words "${files[@]}")
[ -z "$hits" ]
check $? "the documents speak of the product only; reword these lines:
$hits"
finish
