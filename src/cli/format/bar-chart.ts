import { createStyle, displayWidth, type Style } from "./style.js";

export interface BarPoint {
	readonly label: string;
	readonly value: number;
}

export interface BarChartOptions {
	/** Terminal width to fit in; the stream's `columns`, 80 when it has none. */
	readonly widthColumns: number;
	readonly formatValue: (value: number) => string;
	readonly style?: Style;
}

/** Left-aligned eighth blocks: index n draws n/8 of a cell, so a bar's end is drawn 8 times finer than a cell. */
const PARTIAL_BLOCKS = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"] as const;
const FULL_BLOCK = "█";
/** Below this the chart would say nothing; the line is allowed to wrap instead. */
export const MIN_BAR_COLUMNS = 10;

/** A bar of `eighths` eighth-cells: full blocks, then one partial block for the remainder. */
export function drawBar(eighths: number): string {
	const full = Math.floor(eighths / 8);
	return FULL_BLOCK.repeat(full) + PARTIAL_BLOCKS[eighths % 8];
}

/** How many columns the bars get once labels, the axis and the values have theirs. */
export function barColumns(points: readonly BarPoint[], options: BarChartOptions): number {
	const labelWidth = Math.max(0, ...points.map((point) => displayWidth(point.label)));
	const valueWidth = Math.max(0, ...points.map((point) => displayWidth(options.formatValue(point.value))));
	// label + " │" + bar + " " + value, one column short of the edge so terminals never wrap the line.
	return Math.max(MIN_BAR_COLUMNS, options.widthColumns - 1 - labelWidth - 2 - 1 - valueWidth);
}

/**
 * A horizontal bar chart, one line per point, scaled so the largest value fills the bar area.
 * A value above zero always shows at least an eighth, so "little" never reads as "none".
 */
export function renderBarChart(points: readonly BarPoint[], options: BarChartOptions): string[] {
	const style = options.style ?? createStyle(false);
	const labelWidth = Math.max(0, ...points.map((point) => displayWidth(point.label)));
	const values = points.map((point) => options.formatValue(point.value));
	const valueWidth = Math.max(0, ...values.map(displayWidth));
	const width = barColumns(points, options);
	const max = Math.max(0, ...points.map((point) => point.value));
	return points.map((point, index) => {
		let eighths = max > 0 && point.value > 0 ? Math.round((point.value / max) * width * 8) : 0;
		if (point.value > 0 && eighths === 0) eighths = 1;
		const bar = drawBar(eighths);
		const label = point.label.padEnd(labelWidth);
		const value = (values[index] ?? "").padStart(valueWidth);
		return `${label} │${style.cyan(bar)}${" ".repeat(width - displayWidth(bar))} ${value}`;
	});
}
