#!/usr/bin/env bash
# Prints the home of the newest JDK installed here whose major version is from 17 to $1 (the newest a Spark runs
# on), or nothing when there is none (Spark then uses `java` on the PATH, as before). Looks at $JAVA_HOME, the
# JDK of `java` on the PATH and those under /usr/lib/jvm; a JDK's `release` file names its version.
set -euo pipefail
max=${1:?usage: jdk_home.sh MAX_MAJOR}
candidates=()
[ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
if command -v java >/dev/null; then candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"); fi
for home in /usr/lib/jvm/*/; do candidates+=("${home%/}"); done
best= best_major=0
for home in "${candidates[@]}"; do
  [ -x "$home/bin/java" ] && [ -f "$home/release" ] || continue
  version=$(sed -n 's/^JAVA_VERSION="\([^"]*\)"/\1/p' "$home/release")
  major=${version%%.*}
  [[ "$major" =~ ^[0-9]+$ ]] || continue
  if [ "$major" -ge 17 ] && [ "$major" -le "$max" ] && [ "$major" -gt "$best_major" ]; then
    best=$(readlink -f "$home") best_major=$major
  fi
done
echo "$best"
