package perf

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"slices"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The PNG chart of "iwarp perf -png": bandwidth (MB/s) against message
// size in the upper panel, median round-trip latency (microseconds) in the
// lower one, one line per operation (and transport, CRC), the size axis in
// powers of two. The standard library draws it; the text is the 7x13
// fixed font of golang.org/x/image/font/basicfont.

const (
	chartW, chartH = 1000, 760
	panelL, panelR = 90, 230 // margins: axis labels left, legend right
)

var chartColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255}, {0, 0, 0, 255},
}

// chartSeries is one line of a panel.
type chartSeries struct {
	name string
	x, y []float64 // log2(size), value
}

// WriteChart draws the results to a PNG file.
func WriteChart(path string, results []Result) error {
	img := image.NewRGBA(image.Rect(0, 0, chartW, chartH))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	drawText(img, panelL, 8, 2, "iwarp perf: bandwidth and latency against message size", color.Black)
	bw := chartSeriesOf(results, "bw", func(r *Result) float64 { return r.MBps })
	lat := chartSeriesOf(results, "lat", func(r *Result) float64 { return r.Lat.Median })
	half := (chartH - 40) / 2
	drawPanel(img, image.Rect(panelL, 64, chartW-panelR, 40+half-30), "bandwidth, MB/s", bw, false)
	drawPanel(img, image.Rect(panelL, 40+half+20, chartW-panelR, chartH-40), "median round trip, us (log scale)", lat, true)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// chartSeriesOf groups the results of one mode into lines.
func chartSeriesOf(results []Result, mode string, value func(*Result) float64) []chartSeries {
	var out []chartSeries
	idx := map[string]int{}
	for i := range results {
		r := &results[i]
		if r.Mode != mode || r.Size < 1 || (mode == "lat" && r.Lat == nil) {
			continue
		}
		name := r.Op
		if r.Transport == "tcp" {
			name = "tcp " + r.Op
		} else if !r.CRC {
			name += " nocrc"
		}
		if r.QPs > 1 {
			name += fmt.Sprintf(" x%d", r.QPs)
		}
		j, ok := idx[name]
		if !ok {
			j = len(out)
			idx[name] = j
			out = append(out, chartSeries{name: name})
		}
		out[j].x = append(out[j].x, math.Log2(float64(r.Size)))
		out[j].y = append(out[j].y, value(r))
	}
	return out
}

// drawPanel draws axes, ticks, lines and the legend of one panel in r,
// with a linear or a logarithmic value axis.
func drawPanel(img *image.RGBA, r image.Rectangle, title string, series []chartSeries, logY bool) {
	grey := color.RGBA{210, 210, 210, 255}
	drawText(img, r.Min.X, r.Min.Y-chartFace.Height-4, 1, title, color.Black)
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range series {
		for i := range s.x {
			xmin, xmax, ymax = math.Min(xmin, s.x[i]), math.Max(xmax, s.x[i]), math.Max(ymax, s.y[i])
		}
	}
	if len(series) == 0 || math.IsInf(xmin, 0) {
		drawText(img, r.Min.X+10, r.Min.Y+20, 1, "no data", color.Black)
		return
	}
	if xmax == xmin {
		xmin, xmax = xmin-1, xmax+1
	}
	px := func(x float64) int { return r.Min.X + int((x-xmin)/(xmax-xmin)*float64(r.Dx())) }
	var py func(y float64) int
	var ticks []float64
	if logY {
		lo, hi := math.Floor(math.Log10(minPositive(series))), math.Ceil(math.Log10(math.Max(ymax, 1e-3)))
		if hi <= lo {
			hi = lo + 1
		}
		py = func(y float64) int {
			return r.Max.Y - int((math.Log10(math.Max(y, 1e-9))-lo)/(hi-lo)*float64(r.Dy()))
		}
		for e := lo; e <= hi; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
	} else {
		ymax = niceCeil(ymax * 1.05)
		py = func(y float64) int { return r.Max.Y - int(y/ymax*float64(r.Dy())) }
		for i := 0; i <= 5; i++ {
			ticks = append(ticks, ymax*float64(i)/5)
		}
	}
	for _, y := range ticks {
		line(img, r.Min.X, py(y), r.Max.X, py(y), grey)
		lbl := fmt.Sprintf("%.4g", y)
		drawText(img, r.Min.X-8-textWidth(lbl, 1), py(y)-chartFace.Ascent/2-1, 1, lbl, color.Black)
	}
	for x := math.Ceil(xmin); x <= xmax; x++ {
		line(img, px(x), r.Min.Y, px(x), r.Max.Y, grey)
		lbl := sizeLabel(int(math.Exp2(x)))
		drawText(img, px(x)-textWidth(lbl, 1)/2, r.Max.Y+6, 1, lbl, color.Black)
	}
	line(img, r.Min.X, r.Max.Y, r.Max.X, r.Max.Y, color.Black)
	line(img, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y, color.Black)
	for k, s := range series {
		c := chartColors[k%len(chartColors)]
		order := make([]int, len(s.x))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return int(math.Copysign(1, s.x[a]-s.x[b])) })
		for n, i := range order {
			x, y := px(s.x[i]), py(s.y[i])
			for d := -2; d <= 2; d++ {
				line(img, x-2, y+d, x+2, y+d, c)
			}
			if n > 0 {
				j := order[n-1]
				thick(img, px(s.x[j]), py(s.y[j]), x, y, c)
			}
		}
		ly := r.Min.Y + (chartFace.Height+3)*k
		thick(img, r.Max.X+12, ly+chartFace.Ascent/2, r.Max.X+28, ly+chartFace.Ascent/2, c)
		drawText(img, r.Max.X+34, ly, 1, s.name, color.Black)
	}
}

// minPositive returns the smallest positive value of the series (1 if none).
func minPositive(series []chartSeries) float64 {
	m := math.Inf(1)
	for _, s := range series {
		for _, y := range s.y {
			if y > 0 {
				m = math.Min(m, y)
			}
		}
	}
	if math.IsInf(m, 0) {
		return 1
	}
	return m
}

// sizeLabel writes a size as 64, 4K, 1M.
func sizeLabel(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// line draws a one-pixel line (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		img.Set(x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

// thick draws a two-pixel line.
func thick(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	line(img, x0, y0, x1, y1, c)
	line(img, x0, y0+1, x1, y1+1, c)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// chartFace is the font of the chart's text.
var chartFace = basicfont.Face7x13

// drawText draws s with its top left corner at (x, y), each pixel of the
// font scale pixels of the image wide and high.
func drawText(img *image.RGBA, x, y, scale int, s string, c color.Color) {
	if scale <= 1 {
		d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: chartFace, Dot: fixed.P(x, y+chartFace.Ascent)}
		d.DrawString(s)
		return
	}
	// Draw at the font's size, then enlarge pixel by pixel.
	small := image.NewAlpha(image.Rect(0, 0, textWidth(s, 1), chartFace.Height))
	d := font.Drawer{Dst: small, Src: image.Opaque, Face: chartFace, Dot: fixed.P(0, chartFace.Ascent)}
	d.DrawString(s)
	b := small.Bounds()
	for sy := b.Min.Y; sy < b.Max.Y; sy++ {
		for sx := b.Min.X; sx < b.Max.X; sx++ {
			if small.AlphaAt(sx, sy).A == 0 {
				continue
			}
			draw.Draw(img, image.Rect(x+sx*scale, y+sy*scale, x+(sx+1)*scale, y+(sy+1)*scale), image.NewUniform(c), image.Point{}, draw.Over)
		}
	}
}

// textWidth is the width drawText gives s.
func textWidth(s string, scale int) int {
	return font.MeasureString(chartFace, s).Ceil() * scale
}
