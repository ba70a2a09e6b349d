# One PNG per metric from bench-placement's data files.
#   gnuplot -e "dir='bench/results'" bench/placement.gnuplot
if (!exists("dir")) dir = 'bench/results'
set terminal pngcairo size 1600,720 font "DejaVu Sans,11"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.9 border -1
set boxwidth 0.9
set key outside top center horizontal
set xtics rotate by -40 left noenhanced font ",10"
set grid ytics
set bmargin 13
set rmargin 22
set datafile missing "NaN"
# cachepin, no-cpuset, first-fit, kubelet, kubelet-uncore
set linetype 1 lc rgb "#1b7837"
set linetype 2 lc rgb "#bababa"
set linetype 3 lc rgb "#fdb863"
set linetype 4 lc rgb "#5e3c99"
set linetype 5 lc rgb "#b2abd2"

do for [m in "avoidable_splits avoidable_smt llcs_per_container numa_per_container strict_refused llc_max_at_end"] {
  if (m eq "avoidable_splits") { t = "Avoidable LLC splits (% of placed containers; lower is better)"; set nologscale y; set yrange [0:*] }
  if (m eq "avoidable_smt") { t = "Avoidable SMT sharing (% of placed containers; lower is better)"; set nologscale y; set yrange [0:*] }
  if (m eq "llcs_per_container") { t = "Mean LLCs per container (log scale; lower is better; no-cpuset = every LLC)"; set logscale y; set yrange [0.9:*] }
  if (m eq "numa_per_container") { t = "Mean NUMA nodes per container (lower is better; no-cpuset = every node)"; set nologscale y; set yrange [0:*] }
  if (m eq "strict_refused") { t = "Strict requests refused (% of strict requests; lower is better)"; set nologscale y; set yrange [0:*] }
  if (m eq "llc_max_at_end") { t = "Largest request one LLC still holds after the trace (free CPUs; higher is better; no-cpuset n/a)"; set nologscale y; set yrange [0:*] }
  set output dir."/".m.".png"
  set title t noenhanced
  plot for [c=2:6] dir."/data/".m.".dat" using c:xtic(1) title columnheader(c) noenhanced
}
