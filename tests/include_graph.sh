#!/bin/sh
# include_graph.sh - the folder-level include graph of eeb's sources.
#
# Prints, for each top-level folder (a room), how many #include "..." lines
# of its files name a header of each other room, then fails if an include
# goes up the order of rooms below (lowest first), which is also what makes
# a cycle impossible.  A header is found as the compiler finds it: beside
# the including file, else by its path from the repository's root, else by
# its name anywhere in the rooms.
cd "$(dirname "$0")/.." || exit 2
ROOMS="common scoring rundb power fpga tasks sut record server harness"
find $ROOMS -name '*.[ch]' | sort | awk -v rooms="$ROOMS" '
function room_of(path) { sub(/\/.*/, "", path); return path }
BEGIN {
    n = split(rooms, order, " ")
    for (i = 1; i <= n; i++) rank[order[i]] = i
}
{ files[++nf] = $0; h = $0; sub(/.*\//, "", h); if ($0 ~ /\.h$/) where[h] = $0 }
END {
    for (f = 1; f <= nf; f++) {
        file = files[f]; from = room_of(file); dir = file; sub(/\/[^\/]*$/, "", dir)
        line = 0
        while ((getline text < file) > 0) {
            line++
            if (text !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
            name = text; sub(/^[^"]*"/, "", name); sub(/".*/, "", name)
            base = name; sub(/.*\//, "", base)
            if ((getline probe < (dir "/" name)) >= 0) { close(dir "/" name); target = dir "/" name }
            else if ((getline probe < name) >= 0) { close(name); target = name }
            else if (base in where) target = where[base]
            else continue  # a system header
            to = room_of(target)
            count[from, to]++
            if (rank[to] > rank[from]) {
                bad++
                printf "%s:%d: %s (%s) includes %s (%s), a room above it\n", file, line, from, rank[from], target, rank[to] > "/dev/stderr"
            }
        }
        close(file)
    }
    printf "%-8s", "from\\to"
    for (j = 1; j <= n; j++) printf " %7s", order[j]
    printf "\n"
    for (i = 1; i <= n; i++) {
        printf "%-8s", order[i]
        for (j = 1; j <= n; j++) printf " %7s", (order[i], order[j]) in count ? count[order[i], order[j]] : "."
        printf "\n"
    }
    if (bad) { printf "include graph: %d includes go up the rooms (%s, lowest first)\n", bad, rooms > "/dev/stderr"; exit 1 }
}'
