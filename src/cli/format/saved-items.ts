import type { Style } from "./style.js";
import { formatTable } from "./table.js";

type Item = Readonly<Record<string, unknown>>;

/** What `account --saved` shows: the account's saved items, as the service returned them (already masked or not). */
export interface SavedItemsReport {
	readonly configs: readonly Item[];
	readonly schemes: readonly Item[];
	readonly storage: readonly Item[];
	readonly schedules: readonly Item[];
}

function text(value: unknown): string {
	return typeof value === "string" || typeof value === "number" ? String(value) : "";
}

function configOf(item: Item): Item {
	const config = item.config;
	return typeof config === "object" && config !== null && !Array.isArray(config) ? (config as Item) : {};
}

/** ISO date-times as `YYYY-MM-DD HH:MM` (UTC); anything else as given. */
function when(value: unknown): string {
	const raw = text(value);
	const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(raw);
	return match ? `${match[1]} ${match[2]}` : raw;
}

function rulesCount(config: Item): string {
	const scheme = config.extract_scheme;
	if (scheme === undefined || scheme === null) return "";
	return String(Array.isArray(scheme) ? scheme.length : 1);
}

function section(
	title: string,
	items: readonly Item[],
	headers: readonly string[],
	row: (item: Item) => string[],
	style: Style,
): string[] {
	const lines = [style.bold(`${title} (${items.length})`)];
	if (items.length === 0) return [...lines, "  (none)"];
	return [
		...lines,
		...formatTable(
			headers.map((header) => ({ header })),
			items.map(row),
			{ style, indent: "  " },
		),
	];
}

/** The saved configs, schemes, storage configs and schedules as four tables. */
export function describeSavedItems(report: SavedItemsReport, style: Style): string[] {
	return [
		...section(
			"Saved configs",
			report.configs,
			["id", "name", "mode", "url", "rules", "created"],
			(item) => {
				const config = configOf(item);
				return [
					text(item.id),
					text(item.name),
					text(config.mode),
					text(config.url),
					rulesCount(config),
					when(item.created_at),
				];
			},
			style,
		),
		"",
		...section(
			"Saved schemes",
			report.schemes,
			["id", "name", "status", "rules", "url", "created"],
			(item) => {
				const config = configOf(item);
				return [
					text(item.id),
					text(item.name),
					text(item.status),
					rulesCount(config),
					text(config.url),
					when(item.created_at),
				];
			},
			style,
		),
		"",
		...section(
			"Storage configs",
			report.storage,
			["id", "name", "type", "bucket", "default", "created"],
			(item) => {
				const config = configOf(item);
				return [
					text(item.id),
					text(item.name),
					text(item.storage_type),
					text(config.bucket ?? config.container),
					item.is_default === true ? style.green("yes") : "",
					when(item.created_at),
				];
			},
			style,
		),
		"",
		...section(
			"Schedules",
			report.schedules,
			["id", "name", "config", "every", "active", "last run", "next run"],
			(item) => [
				text(item.id),
				text(item.name),
				text(item.config_id),
				typeof item.interval_minutes === "number" ? `${item.interval_minutes} min` : "",
				item.is_active === false ? style.red("no") : item.is_active === true ? style.green("yes") : "",
				[when(item.last_run), text(item.last_status)].filter(Boolean).join(" "),
				when(item.next_run),
			],
			style,
		),
	];
}
