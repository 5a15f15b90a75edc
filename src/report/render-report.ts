import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { formatNumber } from "../common/index.js";
import { renderReportPage } from "./page-script.js";
import type { ReportData } from "./report-data.js";

let uPlotAssets: { script: string; style: string } | undefined;

/** uPlot's own files, read once from the installed package and inlined: the page makes no request. */
function charting(): { script: string; style: string } {
	if (!uPlotAssets) {
		const require = createRequire(import.meta.url);
		uPlotAssets = {
			script: readFileSync(require.resolve("uplot/dist/uPlot.iife.min.js"), "utf8"),
			style: readFileSync(require.resolve("uplot/dist/uPlot.min.css"), "utf8"),
		};
	}
	return uPlotAssets;
}

/** Text for HTML content and attribute values. Scraped URLs and service messages are untrusted. */
function escapeHtml(text: string): string {
	return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** JSON that cannot end the `<script>` element it sits in, whatever strings it holds. */
function scriptJson(value: unknown): string {
	return JSON.stringify(value)
		.replace(/</g, "\\u003c")
		.replace(/\u2028/g, "\\u2028")
		.replace(/\u2029/g, "\\u2029");
}

/** A script's text with any `</script` neutralised (uPlot's code has none; the guard is for the future). */
/**
 * The CLI's bundle keeps function names (esbuild's keepNames), which writes a call to its `__name` helper
 * into the text of every inner function of `renderReportPage`; the page defines it, as the identity.
 */
const PAGE_SCRIPT_HELPERS = "var __name = (target) => target;";

function scriptText(code: string): string {
	return code.replace(/<\/script/gi, "<\\/script");
}

const number = (value: number): string => formatNumber(value);

function milliseconds(value: number | null): string {
	if (value === null) return "–";
	return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value)} ms`;
}

function tile(label: string, value: string, tone = ""): string {
	if (value.length > 14) tone += " wide";
	return `<div class="tile ${tone}"><div class="label">${escapeHtml(label)}</div><div class="value">${escapeHtml(value)}</div></div>`;
}

function chart(name: string, title: string, note = ""): string {
	const caption = note ? `<p class="note">${escapeHtml(note)}</p>` : "";
	return `<section class="card" data-chart="${name}" hidden><h2>${escapeHtml(title)}</h2>${caption}</section>`;
}

function table(title: string, head: [string, string], rows: Array<[string, string]>): string {
	if (rows.length === 0) return "";
	const body = rows.map(([a, b]) => `<tr><td>${escapeHtml(a)}</td><td class="num">${escapeHtml(b)}</td></tr>`).join("");
	return `<section class="card"><h2>${escapeHtml(title)}</h2><table class="data"><thead><tr><th>${escapeHtml(head[0])}</th><th class="num">${escapeHtml(head[1])}</th></tr></thead><tbody>${body}</tbody></table></section>`;
}

/** A table of several columns; `numeric` names the columns aligned right. */
function wideTable(
	title: string,
	head: readonly string[],
	rows: ReadonlyArray<readonly string[]>,
	options: { numeric?: readonly number[]; note?: string; name?: string } = {},
): string {
	if (rows.length === 0) return "";
	const cls = (index: number) => (options.numeric?.includes(index) ? ' class="num"' : "");
	const headCells = head.map((cell, index) => `<th${cls(index)}>${escapeHtml(cell)}</th>`).join("");
	const body = rows
		.map((row) => `<tr>${row.map((cell, index) => `<td${cls(index)}>${escapeHtml(cell)}</td>`).join("")}</tr>`)
		.join("");
	const note = options.note ? `<p class="note">${escapeHtml(options.note)}</p>` : "";
	const name = options.name ? ` data-table="${escapeHtml(options.name)}"` : "";
	return `<section class="card wide"${name}><h2>${escapeHtml(title)}</h2>${note}<table class="data"><thead><tr>${headCells}</tr></thead><tbody>${body}</tbody></table></section>`;
}

/** What a crawl did: its bounds, what it found, how deep it went and why it stopped. */
function crawlCard(data: ReportData): string {
	const crawl = data.summary.crawl;
	if (!crawl) return "";
	const depths = data.crawl_depths ?? [];
	const reached = depths.length > 0 ? depths[depths.length - 1]!.depth : 0;
	const stopReason =
		crawl.stopped_by ??
		data.summary.stopped_reason ??
		(data.summary.complete ? "done: no page left to fetch within the bounds" : "incomplete");
	const facts: Array<[string, string]> = [
		["depth reached", `${number(reached)} of max_depth ${number(crawl.max_depth)}`],
		["pages fetched", `${number(crawl.pages)} of max_pages ${number(crawl.max_pages)}`],
		["URLs discovered", number(crawl.discovered)],
		["stop reason", stopReason],
	];
	const robots = (crawl as { robots_disallowed?: unknown }).robots_disallowed;
	if (typeof robots === "number") facts.push(["links refused by robots.txt", number(robots)]);
	if (crawl.fresh > 0) facts.push(["fresh pages (links read from stored pages)", number(crawl.fresh)]);
	if (crawl.refetched_for_links > 0)
		facts.push(["fresh pages fetched again for links", number(crawl.refetched_for_links)]);
	if (crawl.sitemap_credits > 0) facts.push(["robots.txt and sitemap credits", number(crawl.sitemap_credits)]);
	const rows = facts.map(([a, b]) => `<tr><th>${escapeHtml(a)}</th><td>${escapeHtml(b)}</td></tr>`).join("");
	const byDepth = depths
		.map((entry) => `<tr><td>${number(entry.depth)}</td><td class="num">${number(entry.pages)}</td></tr>`)
		.join("");
	const depthTable = byDepth
		? `<table class="data"><thead><tr><th>depth</th><th class="num">pages</th></tr></thead><tbody>${byDepth}</tbody></table>`
		: "";
	return `<section class="card" data-table="crawl"><h2>Crawl</h2><table class="facts">${rows}</table>${depthTable}</section>`;
}

function failedTable(data: ReportData): string {
	const failed = data.failed_targets;
	const more = failed.total - failed.listed.length;
	return wideTable(
		"Failed targets",
		["URL", "error", "HTTP", "attempts", "message"],
		failed.listed.map((target) => [
			target.url,
			target.error ?? "",
			target.http_status === null ? "" : String(target.http_status),
			number(target.attempts),
			target.message ?? "",
		]),
		{
			numeric: [2, 3],
			name: "failed",
			note:
				more > 0
					? `The first ${number(failed.listed.length)} of ${number(failed.total)} (all are in results.jsonl: status failed).`
					: `${number(failed.total)} in all; credentials in URLs are masked.`,
		},
	);
}

const STYLE = `
:root{--bg:#f6f7f9;--card:#fff;--ink:#1f2933;--muted:#616e7c;--grid:#e4e7eb;--c1:#2563eb;--c2:#f59e0b;--c3:#16a34a;--c4:#dc2626;--c5:#9333ea;--pause:rgba(245,158,11,.18);--outage:rgba(220,38,38,.16)}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;background:var(--bg);color:var(--ink)}
header{padding:20px 28px 8px}h1{margin:0;font-size:20px}h1 small{color:var(--muted);font-weight:400;margin-left:8px}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;font-size:12px;font-weight:600;margin-left:8px;vertical-align:middle}
.badge.ok{background:#dcfce7;color:#166534}.badge.warn{background:#fef3c7;color:#92400e}.badge.bad{background:#fee2e2;color:#991b1b}
.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px;padding:8px 28px}
.tile.wide{grid-column:span 2}.tile{background:var(--card);border-radius:8px;padding:10px 14px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
.tile .label{color:var(--muted);font-size:12px}.tile .value{font-size:20px;font-weight:600}.tile.bad .value{color:var(--c4)}
main{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:14px;padding:10px 28px 28px}
.card{background:var(--card);border-radius:8px;padding:12px 14px;box-shadow:0 1px 2px rgba(0,0,0,.06);min-width:0}
.card.wide{grid-column:1/-1}h2{font-size:14px;margin:0 0 6px}.note{margin:0 0 6px;color:var(--muted);font-size:12px}
table{border-collapse:collapse;width:100%}table.facts{margin-bottom:8px}table.facts th{font-weight:400;color:var(--muted);width:45%}td,th{padding:4px 6px;border-bottom:1px solid var(--grid);text-align:left;overflow-wrap:anywhere}.num{text-align:right;white-space:nowrap}
footer{color:var(--muted);font-size:12px;padding:0 28px 20px}
`;

/**
 * `report.html`: one self-contained page (uPlot, styles, data and script inline; a Content-Security-Policy
 * that forbids every request), so it opens offline and from an e-mail attachment alike.
 */
/** The charts of a re-extraction: what it read and found (nothing was fetched). */
const REEXTRACTION_CHARTS: readonly string[] = [
	chart("status", "Pages read, by status"),
	chart("errors", "Errors by kind"),
	chart("fill", "Extracted fields: fill rate", "Share of ok records in which each field found something."),
	chart("changes", "Changes since the previous values"),
];

function reextractionTiles(summary: ReportData["summary"]): string {
	const fields = Object.values(summary.extract?.fields ?? {});
	const filled = fields.filter((field) => (field.fill_rate ?? 0) > 0).length;
	const changes = summary.changes;
	return [
		tile("pages read", number(summary.targets.done)),
		tile("ok", number(summary.targets.by_status.ok)),
		tile("failed", number(summary.targets.by_status.failed), summary.targets.by_status.failed > 0 ? "bad" : ""),
		tile("without a stored page", number(summary.missing_pages ?? 0), summary.missing_pages ? "bad" : ""),
		tile("fields filled", `${number(filled)} of ${number(fields.length)}`),
		tile("changed", changes ? `${number(changes.changed)} (${number(changes.unchanged)} unchanged)` : "—"),
		tile("credits used", "0"),
		tile("wall time", milliseconds(summary.wall_ms)),
	].join("");
}

export function renderReportHtml(data: ReportData): string {
	const { summary } = data;
	const assets = charting();
	const byStatus = summary.targets.by_status;
	const state = summary.complete
		? byStatus.failed > 0
			? `<span class="badge warn">complete, ${number(byStatus.failed)} failed</span>`
			: `<span class="badge ok">complete</span>`
		: `<span class="badge bad">incomplete${summary.stopped_reason ? `: ${escapeHtml(summary.stopped_reason)}` : ""}</span>`;
	const reextracted =
		summary.reextracted_from === undefined
			? ""
			: ` <span class="badge ok">re-extracted from ${escapeHtml(summary.reextracted_latest ? "the latest ok records" : `run ${summary.reextracted_from}`)}: 0 credits${summary.missing_pages ? `, ${number(summary.missing_pages)} without a stored page` : ""}</span>`;
	const contract =
		summary.contract && !summary.contract.passed
			? ` <span class="badge bad">contract broken: not promoted (${escapeHtml(summary.contract.broken.map((rule) => rule.message).join("; "))})</span>`
			: "";
	// Each domain whose paid-failure breaker is open: what it parked and saved (docs/behaviour.md, "Breakers").
	const breakers = (summary.breakers ?? [])
		.map(
			(breaker) =>
				` <span class="badge bad">breaker open: ${escapeHtml(breaker.domain)} (${escapeHtml(breaker.reason)}); ${number(breaker.parked)} parked, ${number(breaker.credits_saved)} credits saved</span>`,
		)
		.join("");
	const pauses = data.pauses.length;
	// A re-extraction fetched nothing: throughput, latency, credits and pauses would chart nothing. It shows
	// what it did instead: pages read, fields filled, changes, pages missing.
	const reextraction = summary.reextracted_from !== undefined;
	const tiles = reextraction
		? reextractionTiles(summary)
		: [
				tile(
					"targets done",
					`${number(summary.targets.done)}${summary.targets.total !== null ? ` of ${number(summary.targets.total)}` : ""}`,
				),
				tile("ok", number(byStatus.ok)),
				tile("failed", number(byStatus.failed), byStatus.failed > 0 ? "bad" : ""),
				tile("retries", number(summary.retries)),
				tile("credits used", number(summary.credits.used)),
				...(summary.crawl ? [tile("robots.txt and sitemap credits", number(summary.crawl.sitemap_credits))] : []),
				tile("wall time", milliseconds(summary.wall_ms)),
				tile("throughput", `${summary.throughput_per_s.toFixed(1)}/s`),
				tile(
					"latency p50 / p95 / p99",
					`${milliseconds(data.latency.p50)} / ${milliseconds(data.latency.p95)} / ${milliseconds(data.latency.p99)}`,
				),
				tile("service pauses", number(pauses)),
			].join("");
	const charts = (
		reextraction
			? REEXTRACTION_CHARTS
			: [
					`<section class="card wide" data-chart="activity" hidden><h2>Throughput and in-flight fetches</h2><p class="note">Per ${escapeHtml(milliseconds(data.timeline.bucket_ms))} bucket; dashed: the concurrency limit (${number(summary.concurrency)}); shaded: 429 pauses (amber) and outages (red).</p></section>`,
					chart(
						"latency",
						"Latency distribution",
						`Fetch duration, retries and task polling included. p50/p95/p99 ${
							data.latency.percentiles === "exact"
								? `are exact, over all ${number(data.latency.samples)} fetches`
								: `come from a uniform sample of 100,000 of the ${number(data.latency.samples)} fetches`
						}.`,
					),
					chart("credits-time", "Credits over time", "Cumulative, by finish time."),
					chart("credits-mode", "Credits by mode"),
					chart("status", "Targets by status"),
					chart("errors", "Errors by kind"),
					chart("fill", "Extracted fields: fill rate", "Share of ok records in which each field found something."),
					chart("changes", "Changes since the previous run"),
				]
	).join("");
	const tables = [
		crawlCard(data),
		table(
			"Top failing hosts",
			["host", "failed"],
			data.top_failing_hosts.map((host) => [host.host, number(host.failed)]),
		),
		failedTable(data),
	].join("");
	return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(`${summary.job} ${summary.run_id} — scrapejob report`)}</title>
<style>${assets.style}${STYLE}</style>
</head>
<body>
<header><h1>${escapeHtml(summary.job)}<small>run ${escapeHtml(summary.run_id)}</small>${state}${reextracted}${contract}${breakers}</h1></header>
<div class="tiles">${tiles}</div>
<main>${charts}${tables}</main>
<footer>Generated ${escapeHtml(data.generated_at)} by scrapejob from this run folder's files. Started ${escapeHtml(summary.started_at)}, finished ${escapeHtml(summary.finished_at)}.</footer>
<script>${scriptText(assets.script)}</script>
<script id="report-data" type="application/json">${scriptJson(data)}</script>
<script>${PAGE_SCRIPT_HELPERS}(${scriptText(renderReportPage.toString())})(uPlot, JSON.parse(document.getElementById("report-data").textContent));</script>
</body>
</html>
`;
}
