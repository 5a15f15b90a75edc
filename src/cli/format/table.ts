import { createStyle, displayWidth, type Style } from "./style.js";

export interface TableColumn {
	readonly header: string;
	/** Numbers read best right-aligned. @default "left" */
	readonly align?: "left" | "right";
}

export interface TableOptions {
	/** Headers are bold when the style is enabled. */
	readonly style?: Style;
	/** Put before every line, e.g. two spaces under a section heading. @default "" */
	readonly indent?: string;
}

function pad(text: string, width: number, align: "left" | "right"): string {
	const fill = " ".repeat(Math.max(0, width - displayWidth(text)));
	return align === "right" ? fill + text : text + fill;
}

/** Lay rows out in aligned columns (two spaces apart), header first. Lines carry no trailing spaces. */
export function formatTable(
	columns: readonly TableColumn[],
	rows: ReadonlyArray<ReadonlyArray<string>>,
	options: TableOptions = {},
): string[] {
	const style = options.style ?? createStyle(false);
	const indent = options.indent ?? "";
	const widths = columns.map((column, index) =>
		Math.max(displayWidth(column.header), ...rows.map((row) => displayWidth(row[index] ?? ""))),
	);
	const line = (cells: readonly string[], decorate: (text: string) => string) =>
		indent +
		columns
			.map((column, index) => decorate(pad(cells[index] ?? "", widths[index] ?? 0, column.align ?? "left")))
			.join("  ")
			.trimEnd();
	return [
		line(
			columns.map((column) => column.header),
			style.bold,
		),
		...rows.map((row) => line(row, (text) => text)),
	];
}
