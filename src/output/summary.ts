import { checkOptions, type OptionKinds, plural, writeFileAtomic } from "../common/index.js";
import type { RecordStatus } from "./record.js";

/**
 * A breaker an earlier process of the run left open, as a resume reads it back from journal.jsonl or
 * `summary.breakers` (its time parsed).
 */
export interface CarriedBreaker {
	readonly domain: string;
	readonly reason: string;
	/** When it last opened, ms since the epoch. */
	readonly openedMs: number;
}

/** One open breaker in `summary.breakers`. */
export interface BreakerReport {
	/** The registrable domain (or host, `breaker.by: host`). */
	domain: string;
	/** Why it opened, in words. */
	reason: string;
	/** When it last opened (ISO 8601). */
	opened_at: string;
	/** Targets parked this session: not fetched, no record; `--resume` / `--continue` take them. */
	parked: number;
	/** What the parked targets could have cost: each one's worst case. */
	credits_saved: number;
}

/** `summary.json` (docs/reference/outputs.md, "summary.json"). Durations in milliseconds, throughput in targets per second. */
export interface RunSummary {
	job: string;
	run_id: string;
	/** Every target has exactly one record. */
	complete: boolean;
	/** Why the run stopped early, when it did: "interrupted", "unauthorized", "insufficient_credits", … */
	stopped_reason: string | null;
	/** Why it stopped early, in words (what the terminal said); null when it ran to its end. */
	stop_message: string | null;
	targets: {
		total: number | null;
		done: number;
		remaining: number | null;
		by_status: Record<RecordStatus, number>;
		duplicates: number;
		skipped_rows: number;
		/** With `freshness:`: targets not fetched because their latest ok record is younger (no record in this run). */
		fresh?: number;
		/**
		 * Records of targets the job no longer has, after a resume with `--force` whose job's targets changed:
		 * in results.jsonl, `by_status` and the credits, not in `done`. Absent when there are none.
		 */
		superseded?: number;
	};
	credits: {
		used: number;
		by_mode: Record<string, number>;
		remaining: number | null;
		max_credits: number | null;
		/**
		 * After a budget stop: the dearest worst case of one target (the job's, or a fetch the run booked),
		 * what a resume needs per target left to finish: `merge` prints the shard's `--max-credits` from it.
		 */
		dearest_target?: number;
	};
	retries: number;
	rate_limit_pauses: number;
	tasks: { created: number; completed: number; failed: number; left_pending: number };
	errors_by_kind: Record<string, number>;
	/** With `crawl:`: pages fetched, URLs discovered, the bounds, and whether `max_pages` cut it short. */
	crawl?: {
		pages: number;
		discovered: number;
		max_depth: number;
		max_pages: number;
		/** Credits the robots.txt and sitemap fetches cost (`sitemaps: true`, `robots: obey`); included in `credits.used`. */
		sitemap_credits: number;
		/** `robots: obey`: discovered links not followed because their host's robots.txt disallows them. */
		robots_disallowed?: number;
		/** `freshness:`: fresh pages whose links were read from their stored page (counted in `targets.fresh` too). */
		fresh: number;
		/** `freshness:`: fresh pages fetched again, only to follow their links (no stored page): paid, with a record. */
		refetched_for_links: number;
		stopped_by: "max_pages" | null;
	};
	/** `map:` / `search:` sources: URLs each found and the credits its call cost (included in `credits.used`). */
	discovery?: Array<{ kind: "map" | "search"; urls: number; credits_used: number; error?: string }>;
	/** Change tracking against the job's earlier runs: ok records by `change`. */
	changes?: { new: number; changed: number; unchanged: number };
	/** Fetches sent and then given up when this session stopped (grace period over, output failed): no record, the service may still charge them. */
	abandoned?: number;
	started_at: string;
	finished_at: string;
	wall_ms: number;
	throughput_per_s: number;
	latency_ms: { p50: number | null; p95: number | null };
	concurrency: number;
	resumed_from: string | null;
	/**
	 * This session's share (a resumed run has several sessions; the figures above are the run's, every
	 * session included). Absent in summaries of older versions and in merged folders.
	 */
	session?: {
		started_at: string;
		wall_ms: number;
		/** Records this session wrote. */
		done: number;
		credits_used: number;
		retries: number;
		rate_limit_pauses: number;
		tasks_created: number;
		abandoned: number;
		throughput_per_s: number;
	};
	/**
	 * Useful records (docs/behaviour.md, "Useful records") of the run, every session included, and their
	 * share of the records written (null before the first). Absent in summaries written before it existed.
	 */
	useful?: { records: number; rate: number | null };
	/**
	 * The per-domain breakers open when this session ended (docs/behaviour.md, "Breakers"); empty when none
	 * is, absent with `breaker: false`. A run that ends with one exits 6.
	 */
	breakers?: BreakerReport[];
	/**
	 * `mode: adaptive` (docs/behaviour.md, "Adaptive mode"): per registrable domain, the mode and proxy its
	 * next run starts on, and the credits per useful record of this session (null without a useful one).
	 */
	modes?: Record<string, { mode: string; proxy_type: string; credits_per_useful: number | null }>;
	/**
	 * The forecast of this session's credits from the job's earlier runs (docs/behaviour.md, "Forecast"):
	 * expected and its 80 % interval (its targets', plus what it paid besides them: robots.txt, sitemaps,
	 * map/search calls), what the session spent in all, and `error` = (spent − expected) / expected.
	 * Absent when the job's store knew none of the run's domains.
	 */
	forecast?: { expected: number; low: number; high: number; spent: number; error: number | null };
	/** Browser credits the run's `browser_session:` targets used (the account's balance before and after); absent without them. */
	browser_credits_used?: number | null;
	/** With `extract:`: each field's fill rate over ok records, and the required fields below `min_fill`. */
	extract?: {
		records: number;
		fields: Record<string, { filled: number; fill_rate: number | null; required: boolean }>;
		min_fill: number | null;
		below_min_fill: string[];
	};
	/**
	 * The data contract's verdict (field rules, `extract_checks`), when the job has one and the run
	 * completed: a run that breaks it is not promoted to "latest" (`stopped_reason: contract_failed`).
	 */
	contract?: ContractVerdict;
	/**
	 * A re-extraction (`scrapejob extract`): the run id its stored pages came from; with `--run latest`, the
	 * newest of the runs whose latest ok records it read (and `reextracted_latest: true`).
	 */
	reextracted_from?: string;
	reextracted_latest?: true;
	/** A re-extraction: targets of the source without a stored page (listed in missing-pages.txt); no record. */
	missing_pages?: number;
	/**
	 * A fleet worker's session (`run --fleet`): the fleet run it worked on and where the whole fleet stands.
	 * `complete` is then the fleet run's: every target of it has its record, whoever wrote it.
	 */
	fleet?: FleetSummary;
}

/** Where the fleet run stood when this worker ended (docs/guides/fleet.md). */
export interface FleetSummary {
	/** The fleet run's name (`--fleet-run`, or the one given when it was opened). */
	run: string;
	/** This worker's id in `fleet status`. */
	worker: string;
	/** The whole fleet's targets by state when this worker ended (null: its database did not answer then). */
	/** `parked` (behind an open breaker) only when some are: the four states otherwise, as always. */
	targets: { queued: number; leased: number; done: number; failed: number; parked?: number } | null;
	/** Credits the whole fleet run spent (null: its database did not answer), and its budget (null: none). */
	credits_spent: number | null;
	max_credits: number | null;
}

/** One rule of the contract the run broke, with the figures that broke it. */
export interface BrokenRule {
	/** `pattern`, `min`, `max`, `min_length` (a field's rule) or `min_fill`, `max_fill_drop`, `max_rows_drop`, `max_changed`, `service_failed` (no target ok, every failure the service's). */
	rule: string;
	/** The field, for field rules, `min_fill` and `max_fill_drop`. */
	field?: string;
	/** The rule's bound as written. */
	limit: number | string;
	/** What the run measured: a rate, a share, a count of ok records. */
	actual?: number;
	/** `max_fill_drop`, `max_rows_drop`: the mean over the runs compared with. */
	baseline?: number;
	/** Field rules: ok records with a value that breaks it, and the first of them. */
	records?: number;
	example?: { id: string; value: unknown };
	/** The rule and what broke it, in words. */
	message: string;
}

/** A data contract's verdict on a completed run (`summary.json` → `contract`). */
export interface ContractVerdict {
	/** True when the run kept every rule. */
	passed: boolean;
	broken: BrokenRule[];
	/** The runs `max_fill_drop` and `max_rows_drop` compared with (newest first; at most 5). */
	baseline_runs: string[];
	/** Ok records plus the targets the run left out on purpose (fresh, not failed): what `max_rows_drop` compares. */
	rows: number;
}

/** Write atomically (temp file + rename): a crash mid-write leaves the previous summary, never half of one. */
export function writeSummary(path: string, summary: RunSummary): void {
	writeFileAtomic(path, `${JSON.stringify(summary, null, 2)}\n`);
}

/**
 * What happened to the targets, every one accounted for: done of total, by status, and those the run
 * left out on purpose (fresh ones, bad source rows skipped) — a run where everything was fresh says so.
 */
function targetsLine(summary: RunSummary): string {
	const { targets } = summary;
	const s = targets.by_status;
	const extras: string[] = [];
	if (targets.fresh) extras.push(`${targets.fresh} fresh (not fetched: freshness)`);
	if (targets.skipped_rows) extras.push(`${plural(targets.skipped_rows, "bad source row")} skipped`);
	if (targets.duplicates) extras.push(plural(targets.duplicates, "duplicate"));
	if (targets.superseded) extras.push(`${plural(targets.superseded, "record")} of replaced targets (not done)`);
	const total = targets.total !== null ? ` of ${targets.total}` : "";
	// A fleet worker's records are its share: "2 of 39 done" alone reads as a run far from its end.
	const by = summary.fleet ? " by this worker" : "";
	return `${targets.done}${total} done${by}: ${s.ok} ok, ${s.failed} failed, ${s.skipped} skipped${extras.length ? `; ${extras.join(", ")}` : ""}`;
}

/** The whole fleet run when this worker ended: its targets by state and the credits every worker spent. */
function fleetLine(fleet: FleetSummary): string {
	const t = fleet.targets;
	// Not read (the database was out as the worker ended): zeros would read as a run where nothing was done.
	if (t === null || fleet.credits_spent === null) {
		return `run ${fleet.run}: not known, its database did not answer when this worker ended (see \`fleet status\`)`;
	}
	const parked = t.parked ? `, ${t.parked} parked` : "";
	const budget = fleet.max_credits === null ? "" : ` of ${round(fleet.max_credits)}`;
	return `run ${fleet.run}: ${t.done} done, ${t.failed} failed, ${t.queued} queued, ${t.leased} leased${parked}; ${round(fleet.credits_spent)} credits spent${budget} by every worker`;
}

/** Useful records of those written, and the credits each cost. */
function usefulLine(useful: NonNullable<RunSummary["useful"]>, summary: RunSummary): string {
	const share = useful.rate === null ? "" : ` (${Math.round(useful.rate * 1000) / 10}%)`;
	const perUseful = useful.records > 0 ? `; ${creditsPerUseful(summary.credits.used / useful.records)}` : "";
	return `${useful.records} of ${summary.targets.done} records${share}${perUseful}`;
}

/** "1 credit per useful record", "2.83 credits per useful record". */
function creditsPerUseful(credits: number): string {
	const figure = round(credits);
	return `${figure} ${figure === "1" ? "credit" : "credits"} per useful record`;
}

function pad(label: string, width: number): string {
	return label.length >= width ? label : label + " ".repeat(width - label.length);
}

/**
 * The commands a summary prints, built by the caller, which knows the job file, `--out` and the flags
 * of the command line (this layer does not): each is printed as it must be pasted.
 */
export interface SummaryHints {
	/** Continues this very run, shown while it is incomplete. */
	readonly resume?: string;
	/** Promotes this run when its data contract held it back (`--accept`). */
	readonly accept?: string;
	/** The job file as the hints name it: a crawl stopped at `max_pages` finishes once it is raised there. */
	readonly jobFile?: string;
	/** The job's `breaker.cool_down`: an open breaker's line says from when a resume probes it. */
	readonly breakerCoolDownMs?: number;
	/** Who sends an open breaker's probe: a resume of a local run, the next worker of a fleet run. */
	readonly breakerProbedBy?: string;
}

/** Each hint `formatSummary` takes and the kind of value it is. */
const SUMMARY_HINTS = {
	resume: "string",
	accept: "string",
	jobFile: "string",
	breakerCoolDownMs: "number",
	breakerProbedBy: "string",
} as const satisfies OptionKinds<SummaryHints>;

/** A compact, human-readable summary for the end of a run (stdout). */
export function formatSummary(summary: RunSummary, runDir: string, hints: SummaryHints = {}): string {
	checkOptions("formatSummary's hints", hints, SUMMARY_HINTS);
	const resumeCommand = hints.resume ?? "npx scrapejob run <job> --resume";
	const rows: Array<[string, string]> = [
		["run", `${summary.job} ${summary.run_id}${summary.complete ? "" : " (INCOMPLETE)"}`],
		["targets", targetsLine(summary)],
		...(summary.fleet ? [["fleet", fleetLine(summary.fleet)] as [string, string]] : []),
		[
			"credits",
			`${round(summary.credits.used)} used${summary.credits.remaining !== null ? `, ${round(summary.credits.remaining)} remaining` : ""}${formatByMode(summary.credits.by_mode)}${
				// Browser sessions are paid from another balance: said, or a run of them reads as free.
				summary.browser_credits_used != null
					? `; browser sessions: ${round(summary.browser_credits_used)} browser credits`
					: ""
			}`,
		],
		[
			"retries",
			`${plural(summary.retries, "retry", "retries")}, ${plural(summary.rate_limit_pauses, "rate-limit pause")}, ${plural(summary.tasks.created, "task")}`,
		],
		[
			"time",
			`${(summary.wall_ms / 1000).toFixed(1)} s, ${summary.throughput_per_s.toFixed(1)}/s${latencyWords(summary.latency_ms)}${sessionNote(summary)}`,
		],
	];
	if (summary.useful && summary.targets.done > 0) rows.push(["useful", usefulLine(summary.useful, summary)]);
	for (const [domain, mode] of Object.entries(summary.modes ?? {})) {
		const perUseful = mode.credits_per_useful === null ? "no useful record" : creditsPerUseful(mode.credits_per_useful);
		rows.push(["mode", `${domain}: ${mode.mode}+${mode.proxy_type} next run; ${perUseful}`]);
	}
	if (summary.forecast) {
		const { expected, low, high, spent, error } = summary.forecast;
		const off = error === null ? "" : ` (${error >= 0 ? "+" : ""}${Math.round(error * 1000) / 10} %)`;
		rows.push(["forecast", `${expected} credits expected (80 % ${low}–${high}); ${spent} spent${off}`]);
	}
	for (const breaker of summary.breakers ?? []) {
		rows.push([
			"breaker",
			`${breaker.domain} open since ${breaker.opened_at}: ${breaker.reason}; ${plural(breaker.parked, "target")} parked, ${breaker.credits_saved} credits saved${probeFrom(breaker.opened_at, hints.breakerCoolDownMs, hints.breakerProbedBy)}`,
		]);
	}
	const errors = Object.entries(summary.errors_by_kind);
	if (errors.length > 0) rows.push(["errors", errors.map(([kind, count]) => `${kind} ${count}`).join(", ")]);
	// This session's: earlier sessions' abandoned fetches were said when they ended (summary.json keeps the total).
	const abandoned = summary.session?.abandoned ?? summary.abandoned;
	if (abandoned) {
		rows.push([
			"abandoned",
			`${abandoned === 1 ? "1 fetch" : `${abandoned} fetches`} abandoned when the run stopped; the service may still charge them`,
		]);
	}
	if (summary.changes) {
		const { new: added, changed, unchanged } = summary.changes;
		rows.push(["changes", `${added} new, ${changed} changed, ${unchanged} unchanged`]);
	}
	if (summary.crawl) {
		const crawl = summary.crawl;
		rows.push([
			"crawl",
			`${plural(crawl.pages, "page")}, ${plural(crawl.discovered, "URL")} discovered (max_depth ${crawl.max_depth}, max_pages ${crawl.max_pages})${crawl.sitemap_credits > 0 ? `; robots.txt and sitemaps: ${plural(crawl.sitemap_credits, "credit")}` : ""}${crawl.robots_disallowed ? `; ${plural(crawl.robots_disallowed, "link")} disallowed by robots.txt` : ""}`,
		]);
	}
	if (summary.extract) rows.push(...extractRows(summary.extract));
	if (summary.reextracted_from !== undefined) {
		const missing = summary.missing_pages ?? 0;
		rows.push([
			"source",
			`re-extracted from ${summary.reextracted_latest ? `the latest ok record of every target (newest run ${summary.reextracted_from})` : `run ${summary.reextracted_from}`}: 0 credits, nothing sent${missing > 0 ? `; ${plural(missing, "target")} without a stored page (missing-pages.txt)` : ""}`,
		]);
	}
	if (summary.contract) {
		const { contract } = summary;
		rows.push([
			"contract",
			contract.passed
				? "passed: promoted to latest"
				: `BROKEN, not promoted to latest (${hints.accept ? `publish it anyway with \`${hints.accept}\`` : `--accept ${summary.run_id} on run or export accepts it`}): ${contract.broken.map((rule) => rule.message).join("; ")}`,
		]);
	}
	if (summary.stopped_reason) rows.push(["stopped", summary.stopped_reason]);
	if (!summary.complete) {
		// How much is left is not always known (a crawl, a merge missing shards); how to finish it is.
		const left = summary.targets.remaining === null ? "" : `${plural(summary.targets.remaining, "target")}: `;
		// A crawl at max_pages resumes to the same bound: only raising it in the job file lets it go on.
		const raise =
			summary.stopped_reason === "max_pages" && summary.crawl
				? `raise crawl.max_pages (now ${summary.crawl.max_pages}) in ${hints.jobFile ?? "the job file"}, then `
				: "";
		rows.push(["remaining", `${left}${raise}finish with \`${resumeCommand}\``]);
	}
	rows.push(["output", runDir]);
	return `${rows.map(([label, value]) => `${pad(label, 10)} ${value}`).join("\n")}\n`;
}

/** When a resume sends an open breaker's probe: before then its targets stay parked and nothing is sent. */
function probeFrom(openedAt: string, coolDownMs: number | undefined, probedBy = "a resume"): string {
	const opened = Date.parse(openedAt);
	if (coolDownMs === undefined || !Number.isFinite(opened)) return "";
	return `; ${probedBy} sends one target as its probe from ${new Date(opened + coolDownMs).toISOString()}, nothing before`;
}

/** A resumed run's figures are the run's: the last session's share is named next to them. */
function sessionNote(summary: RunSummary): string {
	const session = summary.session;
	if (!summary.resumed_from || !session) return "";
	return ` (this session: ${session.done} in ${(session.wall_ms / 1000).toFixed(1)} s, ${round(session.credits_used)} credits)`;
}

function formatByMode(byMode: Record<string, number>): string {
	const entries = Object.entries(byMode);
	return entries.length ? ` (${entries.map(([mode, credits]) => `${mode} ${round(credits)}`).join(", ")})` : "";
}

function round(value: number): string {
	return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

/** A run that fetched nothing (a re-extraction, every target fresh) has no latency to print. */
function latencyWords(latency: RunSummary["latency_ms"]): string {
	if (latency.p50 === null && latency.p95 === null) return "";
	return `, p50 ${fmtMs(latency.p50)}, p95 ${fmtMs(latency.p95)}`;
}

function fmtMs(value: number | null): string {
	return value === null ? "-" : `${Math.round(value)} ms`;
}

/** Fill rates, one line; then the required fields below `min_fill`, named, when there are any. */
function extractRows(extract: NonNullable<RunSummary["extract"]>): Array<[string, string]> {
	const percent = (rate: number | null) => (rate === null ? "-" : `${Math.round(rate * 1000) / 10}%`);
	const fields = Object.entries(extract.fields).map(
		([name, fill]) => `${name} ${percent(fill.fill_rate)}${fill.required ? " (required)" : ""}`,
	);
	const rows: Array<[string, string]> = [["fields", `${fields.join(", ")} of ${extract.records} ok`]];
	if (extract.below_min_fill.length > 0) {
		rows.push([
			"checks",
			`FAILED: ${extract.below_min_fill.join(", ")} filled below min_fill ${percent(extract.min_fill)}`,
		]);
	}
	return rows;
}
