/// <reference lib="dom" />
import type uPlotType from "uplot";
import type { ReportData } from "./report-data.js";

/**
 * Runs in the browser, inside report.html: draws every chart with uPlot from the embedded data.
 * It is inlined with `Function.prototype.toString`, so it may use only its parameters and the
 * browser's globals — no imports at run time, no closures over this module.
 */
export function renderReportPage(uPlot: typeof uPlotType, data: ReportData): void {
	const css = getComputedStyle(document.documentElement);
	const color = (name: string) => css.getPropertyValue(name).trim();
	const palette = [color("--c1"), color("--c2"), color("--c3"), color("--c4"), color("--c5")];
	const ink = color("--ink");
	const grid = color("--grid");

	function axis(extra: Partial<uPlotType.Axis> = {}): uPlotType.Axis {
		return { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, ...extra };
	}

	function box(name: string): HTMLElement | null {
		const element = document.querySelector<HTMLElement>(`[data-chart="${name}"]`);
		if (!element) return null;
		element.hidden = false;
		return element;
	}

	function size(element: HTMLElement) {
		return { width: Math.max(280, element.clientWidth - 8), height: 240 };
	}

	/** Marks a chart as drawn (the browser test waits for every mark). */
	const drawn = (element: HTMLElement) => (u: uPlotType) => {
		element.dataset.drawn = String(u.data[0]?.length ?? 0);
	};

	const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", sans-serif';
	const measure = document.createElement("canvas").getContext("2d")!;
	measure.font = AXIS_FONT;
	const textWidth = (text: string) => measure.measureText(text).width;

	interface BarOptions {
		/** One colour for every bar, or one per bar. */
		fill?: string | string[];
		/**
		 * Labels on a numeric scale (latency buckets): shown level, every n-th only, n chosen so that no
		 * two overlap. Otherwise (categories) every label is shown, slanted when there are many.
		 */
		thinLabels?: boolean;
	}

	function bars(name: string, labels: string[], values: number[], label: string, options: BarOptions = {}) {
		const element = box(name);
		if (!element) return;
		const xs = labels.map((_, index) => index);
		const fills = Array.isArray(options.fill) ? options.fill : null;
		const fill = fills ? fills[0]! : ((options.fill as string | undefined) ?? palette[0]!);
		const { width, height } = size(element);
		const yAxisPx = 56;
		// The plot's width less the y axis and uPlot's padding; slot = the room per bar.
		const slot = Math.max(1, width - yAxisPx - 24) / Math.max(1, labels.length);
		const widest = Math.max(0, ...labels.map(textWidth)) + 12;
		const stride = options.thinLabels ? Math.max(1, Math.ceil(widest / slot)) : 1;
		const shown = (index: number) => index % stride === 0;
		const slanted = !options.thinLabels && labels.length > 6;
		const centres: number[][] = [];
		new uPlot(
			{
				width,
				height,
				legend: { show: false },
				cursor: { show: false },
				scales: {
					x: { time: false, range: [-0.6, Math.max(0.6, labels.length - 0.4)] },
					y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
				},
				axes: [
					axis({
						font: AXIS_FONT,
						splits: () => xs,
						values: () => labels.map((text, index) => (shown(index) ? text : "")),
						rotate: slanted ? -30 : 0,
						size: slanted ? 70 : 40,
					}),
					axis({ size: yAxisPx }),
				],
				series: [
					{},
					{
						label,
						fill,
						stroke: fill,
						paths: uPlot.paths.bars!({
							size: [0.7, 80],
							...(fills
								? { disp: { fill: { unit: 3, values: () => fills }, stroke: { unit: 3, values: () => fills } } }
								: {}),
							each: (_u, _series, _index, left, top, barWidth, barHeight) => {
								centres.push([Math.round(left + barWidth / 2), Math.round(top + barHeight / 2)]);
							},
						}),
						points: { show: false },
					},
				],
				hooks: {
					draw: [
						drawn(element),
						(u: uPlotType) => {
							// Bar centres in canvas pixels, and the least room between two shown labels in CSS
							// pixels (negative: they overlap): what the browser test checks.
							element.dataset.bars = JSON.stringify(centres.splice(0));
							let gap = Number.POSITIVE_INFINITY;
							let previous: { at: number; half: number } | null = null;
							labels.forEach((text, index) => {
								if (!shown(index) || text === "") return;
								const at = u.valToPos(index, "x");
								const half = textWidth(text) / 2;
								if (previous) gap = Math.min(gap, at - half - (previous.at + previous.half));
								previous = { at, half };
							});
							if (!slanted) element.dataset.labelGap = String(Math.round(gap));
						},
					],
				},
			},
			[xs, values],
			element,
		);
	}

	const timeline = data.timeline;
	const bucketSeconds = timeline.bucket_ms / 1000;
	const times = timeline.finished.map((_, index) => (timeline.start_ms + index * timeline.bucket_ms) / 1000);

	// Throughput and in-flight over time, against the account limit; pauses shaded.
	const activity = box("activity");
	if (activity) {
		const shadePauses: uPlotType.Plugin = {
			hooks: {
				drawClear: [
					(u: uPlotType) => {
						const context = u.ctx;
						context.save();
						for (const pause of data.pauses) {
							const left = u.valToPos(pause.start_ms / 1000, "x", true);
							const right = u.valToPos(pause.end_ms / 1000, "x", true);
							context.fillStyle = pause.reason === "rate_limited" ? color("--pause") : color("--outage");
							context.fillRect(left, u.bbox.top, Math.max(2, right - left), u.bbox.height);
						}
						context.restore();
					},
				],
			},
		};
		const limit = data.summary.concurrency;
		const stepped = uPlot.paths.stepped!({ align: 1 });
		new uPlot(
			{
				...size(activity),
				plugins: [shadePauses],
				scales: {
					x: { time: true },
					rate: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
					flight: { range: (_u, _min, max) => [0, Math.max(limit, max) * 1.15] },
				},
				axes: [
					axis(),
					axis({ scale: "rate", label: "targets/s", size: 56 }),
					axis({ scale: "flight", side: 1, label: "in flight", grid: { show: false }, size: 56 }),
				],
				series: [
					{},
					{
						label: "throughput (/s)",
						scale: "rate",
						stroke: palette[0]!,
						width: 2,
						points: { show: false },
						paths: stepped,
					},
					{
						label: "in flight",
						scale: "flight",
						stroke: palette[1]!,
						width: 1.5,
						points: { show: false },
						paths: stepped,
					},
					{ label: "limit", scale: "flight", stroke: palette[3]!, dash: [6, 4], width: 1.5, points: { show: false } },
				],
				hooks: { draw: [drawn(activity)] },
			},
			[times, timeline.finished.map((count) => count / bucketSeconds), timeline.in_flight, times.map(() => limit)],
			activity,
		);
	}

	// Credits over time, cumulative.
	const creditsOverTime = box("credits-time");
	if (creditsOverTime) {
		let total = 0;
		const cumulative = timeline.credits.map((credits) => (total += credits));
		new uPlot(
			{
				...size(creditsOverTime),
				scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.05)] } },
				axes: [axis(), axis({ size: 64 })],
				series: [
					{},
					{ label: "credits used", stroke: palette[2]!, fill: `${palette[2]!}33`, width: 2, points: { show: false } },
				],
				hooks: { draw: [drawn(creditsOverTime)] },
			},
			[times, cumulative],
			creditsOverTime,
		);
	}

	const latency = data.latency;
	const last = latency.counts.reduce((found, count, index) => (count > 0 ? index : found), 0);
	const first = latency.counts.findIndex((count) => count > 0);
	if (first >= 0) {
		const from = Math.max(0, first - 1);
		const to = Math.min(latency.counts.length - 1, last + 1);
		const labels = latency.bounds_ms
			.slice(from, to + 1)
			.map((bound) => (bound >= 1000 ? `≤${(bound / 1000).toFixed(1)}s` : `≤${Math.round(bound)}ms`));
		while (labels.length < to - from + 1) labels.push("longer");
		bars("latency", labels, latency.counts.slice(from, to + 1), "fetches", { fill: palette[1]!, thinLabels: true });
	}

	const modes = Object.entries(data.summary.credits.by_mode);
	if (modes.length > 0)
		bars(
			"credits-mode",
			modes.map(([mode]) => mode),
			modes.map(([, credits]) => credits),
			"credits",
			{ fill: palette[2]! },
		);

	const statuses = Object.entries(data.summary.targets.by_status);
	bars(
		"status",
		statuses.map(([status]) => status),
		statuses.map(([, count]) => count),
		"targets",
		{ fill: palette[0]! },
	);

	const errors = Object.entries(data.summary.errors_by_kind).sort((a, b) => b[1] - a[1]);
	if (errors.length > 0)
		bars(
			"errors",
			errors.map(([kind]) => kind),
			errors.map(([, count]) => count),
			"records",
			{ fill: palette[4]! },
		);

	if (data.fields.length > 0) {
		bars(
			"fill",
			data.fields.map((field) => field.name),
			data.fields.map((field) => (field.of ? (100 * field.filled) / field.of : 0)),
			"% filled",
			{ fill: palette[1]! },
		);
	}

	if (data.changes) {
		bars(
			"changes",
			["new", "changed", "unchanged"],
			[data.changes.new, data.changes.changed, data.changes.unchanged],
			"targets",
			// New is not an error: green; changed amber; unchanged grey. Red stays for failures.
			{ fill: [palette[2]!, palette[1]!, color("--muted")] },
		);
	}
}
