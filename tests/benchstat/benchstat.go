// Package benchstat holds what the benchmark commands under tests/cmd
// share: the median of a series, and the CPU time of the plane's
// processes read from /proc.
package benchstat

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Median is the median of v, 0 for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Collect is f of every item of items.
func Collect[T any](items []T, f func(T) float64) []float64 {
	out := make([]float64, 0, len(items))
	for _, it := range items {
		out = append(out, f(it))
	}
	return out
}

// ProcessCPU sums the CPU seconds of the processes by command name.
func ProcessCPU(pids []int) map[string]float64 {
	out := map[string]float64{}
	pids = slices.Clone(pids)
	slices.Sort(pids)
	for _, pid := range slices.Compact(pids) {
		if pid <= 0 {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		out[strings.TrimSpace(string(comm))] += CPUSeconds(pid)
	}
	return out
}

// CPUSeconds is the user and system CPU time a process has used, 0 if
// unknown.
func CPUSeconds(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after it. utime and stime are fields 14 and 15, in clock ticks.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}
