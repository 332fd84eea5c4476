package soak

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// The plot's geometry: panels stacked, sharing the time axis.
const (
	svgWidth   = 960
	svgLeft    = 70
	svgRight   = 20
	svgPanelH  = 150
	svgGap     = 40
	svgTop     = 40
	svgBottomX = 40
)

// SVG plots the run: the manager's RSS, its goroutines, its writes a
// minute and the convergence time of each step, over the run's minutes,
// with each step's fault (start of the step until its fault ended)
// shaded. Hand-written SVG: no plotting library is worth a dependency
// for four line charts.
func (r *Report) SVG() string {
	type panel struct {
		title, unit string
		points      []Point
		dots        bool
	}
	var conv []Point
	for _, s := range r.Steps {
		if !s.Converged.IsZero() {
			conv = append(conv, Point{s.Converged, s.Convergence.Seconds()})
		}
	}
	panels := []panel{
		{"manager RSS", "MiB", r.series.rss, false},
		{"manager goroutines", "", r.series.goroutines, false},
		{"manager writes a minute", "/min", r.series.writes, false},
		{"convergence after each step's fault", "s", conv, true},
	}
	height := svgTop + len(panels)*(svgPanelH+svgGap) + svgBottomX
	span := r.End.Sub(r.Start).Seconds()
	if span <= 0 {
		span = 1
	}
	plotW := float64(svgWidth - svgLeft - svgRight)
	x := func(t time.Time) float64 { return svgLeft + plotW*t.Sub(r.Start).Seconds()/span }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	verdict := "pass"
	if n := r.ViolationCount(); n > 0 {
		verdict = fmt.Sprintf("%d violations", n)
	}
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", svgLeft,
		html.EscapeString(fmt.Sprintf("Capwright soak, seed %d: %s, %d steps, %s", r.Seed, r.End.Sub(r.Start).Round(time.Second), len(r.Steps), verdict)))
	for i, p := range panels {
		top := float64(svgTop + i*(svgPanelH+svgGap))
		bottom := top + svgPanelH
		// The faults, shaded.
		for _, s := range r.Steps {
			if s.Step.Chaos == NoChaos {
				continue
			}
			x0, x1 := x(s.Start), x(s.FaultEnd)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#f4c7c3" opacity="0.6"><title>%s</title></rect>`+"\n",
				x0, top, math.Max(x1-x0, 1), svgPanelH, html.EscapeString(s.Step.String()))
		}
		lo, hi := 0.0, 1.0
		for _, pt := range p.points {
			hi = math.Max(hi, pt.Value)
		}
		hi *= 1.1
		y := func(v float64) float64 { return bottom - (v-lo)/(hi-lo)*svgPanelH }
		fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="none" stroke="#888"/>`+"\n", svgLeft, top, plotW, svgPanelH)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-weight="bold">%s</text>`+"\n", svgLeft, top-6, html.EscapeString(p.title))
		for k := 0; k <= 4; k++ {
			v := lo + (hi-lo)*float64(k)/4
			fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", svgLeft, svgLeft+plotW, y(v), y(v))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", svgLeft-6, y(v)+4, html.EscapeString(fmt.Sprintf("%.0f%s", v, p.unit)))
		}
		if p.dots {
			for _, pt := range p.points {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#c0392b"/>`+"\n", x(pt.Time), y(pt.Value))
			}
		} else if len(p.points) > 0 {
			var path strings.Builder
			for k, pt := range p.points {
				cmd := "L"
				if k == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%.1f,%.1f ", cmd, x(pt.Time), y(pt.Value))
			}
			fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="#1f5fa8" stroke-width="1.5"/>`+"\n", strings.TrimSpace(path.String()))
		}
	}
	// The time axis, in minutes.
	axisY := float64(svgTop + len(panels)*(svgPanelH+svgGap) - svgGap + 16)
	minutes := int(span / 60)
	stepM := max(1, minutes/10)
	for m := 0; m <= minutes; m += stepM {
		t := r.Start.Add(time.Duration(m) * time.Minute)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%dm</text>`+"\n", x(t), axisY, m)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%.1f">shaded: a fault (chaos) from its start until it ended</text>`+"\n", svgLeft, axisY+18)
	b.WriteString("</svg>\n")
	return b.String()
}
