import type { Logger } from "pino";
import { type BodySpill, MAX_RESET_SECONDS, type ScraperClient, type ScraperHeaders } from "../../api/index.js";
import type { BrowserServiceAccess } from "../../browser/index.js";
import {
	type Clock,
	creditCostRange,
	maskUrlCredentials,
	redactSecrets,
	type Sleep,
	type TaskQueue,
} from "../../common/index.js";
import type { Crawler } from "../../crawl/index.js";
import { MAX_PAGE_LINKS, type PagePool, type PageTaskResult, PageTooComplexError } from "../../extract/index.js";
import type { Job, Target } from "../../job/index.js";
import { OutputError, type PageStore, type ResultRecord } from "../../output/index.js";
import { type AdaptiveModes, adaptiveModeUsed, createAdaptiveModes, rungName } from "../economics/adaptive-mode.js";
import type { Breakers } from "../economics/breaker.js";
import type { TargetCost } from "../economics/host-costs.js";
import type { TargetEconomics } from "../economics/run-economics.js";
import type { CreditBudget } from "../flow/credit-budget.js";
import type { OutageMonitor } from "../flow/outage-monitor.js";
import type { SendGate } from "../flow/send-gate.js";
import type { StopController } from "../flow/stop-controller.js";
import type { StampedBody } from "../records/record-writer.js";
import type { RunStatistics } from "../records/run-statistics.js";
import { fetchBrowserTarget } from "./browser-target.js";
import { storedPageHtml } from "./crawl-hook.js";
import { addExtraction, isHtmlResult, needsPageRead, pageWorkOf } from "./extract-record.js";
import { type FetchResult, type FetchTargetDeps, fetchTarget } from "./fetch-target.js";
import type { Journal } from "./journal.js";
import { type PaidAnswer, type PaidAnswers, paidAnswerOf } from "./paid-answers.js";
import { fetchedRecord } from "./result-record.js";
import type { TaskPollOptions } from "./task-poller.js";
import { judgeUseful } from "./useful-record.js";

/** Where an adaptive target is on its ladder: `at` indexes `ladder`, itself indexes `LADDER`. */
interface ClimbStep {
	readonly modes: AdaptiveModes;
	readonly domain: string;
	readonly ladder: readonly number[];
	at: number;
}

/** What the page pool read of a page that it was not asked to read. */
const NO_PAGE: { read?: PageTaskResult; tooComplex?: string } = Object.freeze({});

/** A record built without reading its page, in `readFetched`'s shape. */
function withoutPage(
	record: ResultRecord | undefined,
): { record: ResultRecord; page: { read?: PageTaskResult }; kept: boolean } | undefined {
	return record === undefined ? undefined : { record, page: NO_PAGE, kept: false };
}

/**
 * Charged failures of one kind in a row, across targets, that stop the run (`paid_failures`): the service
 * answers (so it is no outage, whose retries are free) and charges, and nothing comes of it — a block, a
 * broken answer. Any other outcome in between starts the count again (docs/behaviour.md, "Pay once, never
 * lose a record").
 */
export const PAID_FAILURES_IN_A_ROW = 20;

/** Counts charged failures of one kind in a row; says when the run should stop. */
export function createPaidFailureWatch(limit = PAID_FAILURES_IN_A_ROW) {
	let kind: string | null = null;
	let inRow = 0;
	return {
		/** One record's outcome: the kind that failed `limit` times in a row, charged each time, or null. */
		record(status: string, error: string | null, credits: number): string | null {
			if (status !== "failed" || credits <= 0 || error === null) {
				kind = null;
				inRow = 0;
				return null;
			}
			if (error !== kind) {
				kind = error;
				inRow = 0;
			}
			inRow += 1;
			return inRow >= limit ? kind : null;
		},
	};
}

/** Book a fetch's worst case, or stop the run (`budget_exhausted`) when it can no longer fit. */
export async function reserveOrStop(
	budget: CreditBudget,
	stops: StopController,
	worstCase: number,
	targetId?: string,
): Promise<boolean> {
	if (await budget.reserve(worstCase, () => stops.stopping, targetId)) return true;
	stops.stop(
		"budget_exhausted",
		budget.exhausted?.(worstCase, stops.words) ??
			`stopping: max_credits ${budget.limit} reached (${budget.spent} spent; the next fetch may cost ${worstCase}); continue with ${stops.words.resumeWithLargerBudget}`,
	);
	return false;
}

export interface FetchDepsParts {
	readonly client: ScraperClient;
	readonly gate: SendGate;
	readonly outage: OutageMonitor;
	readonly job: Job;
	readonly stops: StopController;
	readonly journal: Journal;
	readonly stats: RunStatistics;
	readonly taskPoll: TaskPollOptions;
	readonly method: "GET" | "POST";
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly random: () => number;
	/** Keys to redact from task ids before they reach the journal. */
	readonly secrets: readonly string[];
	readonly onHeaders: (headers: ScraperHeaders, sentAt: number) => void;
	/** A fetch goes on as a task (after its journal line): a fleet worker stores the id on its lease. */
	readonly onTask?: (targetId: string, taskId: string) => void;
	/** Before each send (a fleet worker: its slot below the fleet's limit). */
	readonly beforeSend?: FetchTargetDeps["beforeSend"];
	/** Right before each send, past the gate (a fleet worker: its lease on the target still its own). */
	readonly maySend?: FetchTargetDeps["maySend"];
	/** run.log's logger. */
	readonly log: Logger;
	/** The terminal's. */
	readonly logger?: Logger;
}

/** One set of dependencies for every fetch of a run: nothing per target but the target itself. */
export function createFetchDeps(parts: FetchDepsParts): FetchTargetDeps {
	const { log, journal, stats, stops } = parts;
	let resetCapWarned = false;
	return {
		client: parts.client,
		gate: parts.gate,
		outage: parts.outage,
		maxBodyBytes: parts.job.maxBodyBytes,
		onResetCapped: () => {
			if (resetCapWarned) return;
			resetCapWarned = true;
			const message = `a 429 asked to wait more than ${MAX_RESET_SECONDS} s; waiting ${MAX_RESET_SECONDS} s (the cap) instead`;
			log.warn({ event: "reset_capped", cap_s: MAX_RESET_SECONDS }, message);
			parts.logger?.warn({ cap_s: MAX_RESET_SECONDS }, message);
		},
		clock: parts.clock,
		sleep: parts.sleep,
		random: parts.random,
		retry: parts.job.retry,
		taskPoll: parts.taskPoll,
		signal: stops.inflight,
		stopped: stops.stopped,
		method: parts.method,
		isStopping: () => stops.stopping,
		onHeaders: parts.onHeaders,
		beforeSend: parts.beforeSend,
		...(parts.maySend ? { maySend: parts.maySend } : {}),
		onTaskId: (targetId, taskId) => {
			// A task id echoing a key is written redacted (the resume then fetches again rather than leak it).
			const safe = redactSecrets(taskId, parts.secrets);
			journal.task(targetId, safe);
			parts.onTask?.(targetId, safe);
			stats.taskCreated();
			log.info({ event: "task", id: targetId, task_id: taskId }, "fetch continues as a task");
		},
		// Written at once, a synchronous line: a process killed while the target waits for its retry leaves it.
		onCharged: (targetId, credits) => {
			stops.guardCharge(() => journal.charged(targetId, credits));
		},
		onRetry: (targetId, kind) => {
			log.info({ event: "retry", id: targetId, kind }, "retrying");
		},
	};
}

export interface TargetRunnerParts {
	readonly job: Job;
	readonly stops: StopController;
	readonly budget: CreditBudget;
	readonly journal: Journal;
	/** The run's one record path (record-writer.ts): false when the lease fence kept the record out. */
	readonly write: (record: ResultRecord, body: StampedBody) => boolean;
	readonly stats: RunStatistics;
	readonly fetchDeps: FetchTargetDeps;
	readonly crawler: Crawler | null;
	/** Where `extract:` and `crawl:` read pages (worker threads bounded by `page_timeout`); null when nothing reads them. */
	readonly pagePool: PagePool | null;
	/** Where a page's content goes: `output.content` and the run's page store. */
	readonly content: { readonly mode: "inline" | "files" | "none"; readonly pages: PageStore | null };
	/** Task ids a resumed run finds in its journal: those fetches continue as polls, not new sends. */
	readonly resumeTasks: ReadonlyMap<string, string>;
	/** Answers an earlier session paid for and kept before their page was read: read back, not fetched. */
	readonly resumePaid: ReadonlyMap<string, PaidAnswer>;
	/** Credits earlier sessions were charged for targets without a record (a kept answer, failed attempts): their record carries them. */
	readonly resumeCharged: ReadonlyMap<string, number>;
	/** `mode: adaptive` targets an earlier process climbed past a rung (journal.ts, `climb`): the rung they resume on. */
	readonly resumeClimbs: ReadonlyMap<string, string>;
	/** Where a paid answer waits while its page is read (`paid/<id>`). */
	readonly paidAnswers: PaidAnswers;
	/** Where large pages go instead of memory when nothing reads them. */
	readonly bodySpill: BodySpill | undefined;
	/** The remote browser service and its session limit, for `browser_session:` targets. */
	readonly browser: { readonly access: BrowserServiceAccess; readonly sessions: TaskQueue } | null;
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly random: () => number;
	/** The per-domain breakers (`breaker:`); null with `breaker: false`. */
	readonly breakers: Breakers | null;
	/** `mode: adaptive`'s ladder and the run's cost per host (run-economics.ts); absent: a ladder that remembers nothing, no tally. */
	readonly economics?: TargetEconomics;
	/** run.log's logger. */
	readonly log: Logger;
}

export interface TargetRunner {
	/** Fetch one target and write its record (or leave it for `--resume`): reserve → fetch → commit/release. */
	run(target: Target): Promise<void>;
	/** A fresh crawled page: its links from its stored page, nothing fetched, no record. */
	followStoredPage(target: Target): Promise<void>;
	/** Whether a retry after a charged failed attempt is sent (the budget, the breaker, the paid-failures stop). */
	readonly chargedRetry: NonNullable<FetchTargetDeps["chargedRetry"]>;
}

/**
 * The work of one target: book its worst-case credits, journal it as started, fetch it (or run its
 * browser session), read the page in the page pool, then hand the record to the record writer and
 * settle the booking with what it cost. Every outcome of a fetch is accounted for here: written,
 * left for `--resume`, abandoned, or a stop.
 */
export function createTargetRunner(parts: TargetRunnerParts): TargetRunner {
	const { job, stops, budget, journal, stats, crawler, pagePool, clock, log } = parts;
	const maxDepth = job.crawl?.maxDepth ?? 0;
	/** The job's CSS block signatures: the page pool parses a page for them only when there are some. */
	const blockCss = job.blockSignatures?.css ?? [];
	const wantsLinksOf = (target: Target) =>
		crawler !== null && target.crawl !== undefined && target.crawl.depth < maxDepth;
	const paidFailures = createPaidFailureWatch();
	const stopOnPaidFailures = (kind: string) =>
		stops.stop(
			"paid_failures",
			`stopping: ${PAID_FAILURES_IN_A_ROW} fetches in a row were charged and failed with ${kind}; no more credits go to it (continue with ${stops.words.resumeOn} once its cause is fixed)`,
		);
	/**
	 * Each charged attempt that failed counts as it happens, not only a target's last: a domain whose every
	 * page fails opens its breaker after `trip` charged fetches, not `trip` targets' worth of retries; a
	 * half-open breaker's probe gets one (the breaker is not closed: no retry). A retry is a fetch like
	 * any: it goes only while it fits the budget beside what the target's attempts were charged so far
	 * (its booking covers one attempt, not each retry a charged failure calls for); else the run stops
	 * with `budget_exhausted` and the target waits for a resume with a larger one.
	 */
	const fetchDeps: FetchTargetDeps = {
		...parts.fetchDeps,
		chargedRetry(targetId, url, kind, credits, chargedSoFar) {
			const countPaid = (closed: boolean) => {
				if (!closed) return false;
				const paidFailure = paidFailures.record("failed", kind, credits);
				if (paidFailure !== null) {
					stopOnPaidFailures(paidFailure);
					return false;
				}
				const fits = budget.retryFits === undefined ? true : budget.retryFits(chargedSoFar);
				return typeof fits === "boolean" ? retryOrStop(fits) : fits.then(retryOrStop);
			};
			const retryOrStop = (fits: boolean) => {
				if (fits) return true;
				stops.stop(
					"budget_exhausted",
					`stopping: max_credits ${budget.limit} reached (${budget.spent + chargedSoFar} spent or charged; a retry of ${targetId} may cost more); continue with ${stops.words.resumeWithLargerBudget}`,
				);
				return false;
			};
			const breakers = parts.breakers;
			const closed = breakers === null ? true : breakers.failedAttempt(breakers.keyOf(url), targetId, kind);
			return typeof closed === "boolean" ? countPaid(closed) : closed.then(countPaid);
		},
	};
	/** Targets whose paid answer this session read back from `paid/` instead of fetching. */
	const restored = new Set<string>();
	/** Targets whose latest answer this session kept with a `paid` line (which holds its charges), not settled yet. */
	const paidLines = new Set<string>();

	/** Paid and left without a record: a `charged` line, so a resume counts it and the target's record carries it. */
	const journalCharge = (targetId: string, credits: number) => {
		if (credits > 0) stops.guardCharge(() => journal.charged(targetId, credits));
	};

	/**
	 * What the page pool reads from a fetched page (fields, links), or why it could not (past
	 * `page_timeout` or its worker's memory: `page_too_complex`). Off this thread: the run's timers,
	 * signals and other targets go on meanwhile.
	 */
	const readPage = async (
		target: Target,
		result: FetchResult,
	): Promise<{ read?: PageTaskResult; tooComplex?: string; abandoned?: true }> => {
		const work = pagePool ? pageWorkOf(target, result, wantsLinksOf(target), blockCss) : null;
		if (!work || !pagePool) return {};
		try {
			return { read: await pagePool.run(work, stops.inflight) };
		} catch (error) {
			if (error instanceof PageTooComplexError) return { tooComplex: error.message };
			// A stop past its grace period ends the page's worker too: the fetch is abandoned like any in flight.
			if (stops.inflight.aborted) return { abandoned: true };
			throw error;
		}
	};

	/** The record of a page the pool gave up on: failed, its page file kept (`content: files`). */
	const markTooComplex = (record: ResultRecord, message: string) => {
		record.status = "failed";
		record.error = "page_too_complex";
		record.message = message;
		delete record.data;
	};

	/**
	 * The record of a fetched target whose page the pool reads first; undefined when the output has
	 * failed or the lease was lost (checked again after the page pool's answer: nothing is written past
	 * either).
	 */
	const writeReadFetched = async (
		target: Target,
		result: Extract<FetchResult, { kind: "ok" | "failed" }>,
		charged: number,
		started: number,
	): Promise<ResultRecord | undefined> => {
		const built = await readFetched(target, result, charged, started);
		return built === undefined ? undefined : commitRead(target, result, built);
	};

	/** A fetched target's page kept (paid, not read yet), read by the page pool, and its record built; nothing written. */
	const readFetched = async (
		target: Target,
		result: Extract<FetchResult, { kind: "ok" | "failed" }>,
		charged: number,
		started: number,
	): Promise<{ record: ResultRecord; page: { read?: PageTaskResult }; kept: boolean } | undefined> => {
		if (!stops.mayWrite()) return undefined;
		// Paid, and its page not read yet: kept and journalled first, so a process that dies while the page
		// pool reads it leaves an answer a resume finishes without paying again.
		const kept =
			pagePool !== null && !restored.has(target.id) && needsPageRead(target, result, wantsLinksOf(target), blockCss);
		if (kept && result.kind === "ok") {
			const stored = stops.guardOutput(() => {
				parts.paidAnswers.keep(target.id, result.body);
				journal.paid(paidAnswerOf(target.id, result, charged));
				return true;
			});
			if (stored === undefined) return undefined;
			paidLines.add(target.id);
		}
		const page = await readPage(target, result);
		if (page.abandoned) return undefined;
		const record = buildFetched(target, result, charged, started, page);
		return record === undefined ? undefined : { record, page, kept };
	};

	/** Write a record `readFetched` built, and let its kept answer go. */
	const commitRead = (
		target: Target,
		result: Extract<FetchResult, { kind: "ok" | "failed" }>,
		built: { record: ResultRecord; page: { read?: PageTaskResult }; kept: boolean },
	): ResultRecord | undefined => {
		const record = commitFetched(target, result, built.record, built.page);
		if (record) settleKept(target, built.kept);
		return record;
	};

	/** A kept or restored answer whose record is written (or that a stronger fetch replaces): its file goes. */
	const settleKept = (target: Target, kept: boolean) => {
		paidLines.delete(target.id);
		if (kept || restored.has(target.id)) {
			parts.paidAnswers.settled(target.id);
			restored.delete(target.id);
		}
	};

	/**
	 * The record of a fetched target, built and written; undefined when the output has failed or the
	 * lease was lost. Synchronous: without a page pool (no `extract:`, no crawl) nothing is awaited
	 * between the answer and its record.
	 */
	const writeFetched = (
		target: Target,
		result: Extract<FetchResult, { kind: "ok" | "failed" }>,
		charged: number,
		started: number,
		page: { read?: PageTaskResult; tooComplex?: string },
	): ResultRecord | undefined => {
		const record = buildFetched(target, result, charged, started, page);
		return record === undefined ? undefined : commitFetched(target, result, record, page);
	};

	/** A fetched target's record, built and judged (useful-record.ts), not written; undefined when the output failed. */
	const buildFetched = (
		target: Target,
		result: Extract<FetchResult, { kind: "ok" | "failed" }>,
		charged: number,
		started: number,
		page: { read?: PageTaskResult; tooComplex?: string },
	): ResultRecord | undefined => {
		if (!stops.mayWrite()) return undefined;
		try {
			const record = addExtraction(
				fetchedRecord(target, result, charged, started, clock(), parts.content),
				target,
				result,
				job,
				page.read,
			);
			if (page.tooComplex !== undefined) markTooComplex(record, page.tooComplex);
			return judgeUseful(record, target, result, job, page.read);
		} catch (error) {
			stops.outputFailed(error);
			return undefined;
		}
	};

	/** Write a built record (its page's links to the frontier first); undefined when the output failed or the lease was lost. */
	const commitFetched = (
		target: Target,
		result: Extract<FetchResult, { kind: "ok" | "failed" }>,
		record: ResultRecord,
		page: { read?: PageTaskResult },
	): ResultRecord | undefined => {
		if (!stops.mayWrite()) return undefined;
		try {
			// Links go to the frontier before the record is written: a crash between the two loses nothing. A
			// page that is not HTML has none (a fleet keeps that, so a fresh one is not fetched for links).
			if (crawler && result.kind === "ok") {
				const links = isHtmlResult(target, result) ? (page.read?.links ?? null) : [];
				noteLinksCut(target, links);
				crawler.pageFetched(target, links, result.finalUrl);
			}
			const body = record.status === "ok" && result.kind === "ok" ? (result.spilled ?? result.body) : null;
			return parts.write(record, body) ? record : undefined;
		} catch (error) {
			stops.outputFailed(error);
			return undefined;
		}
	};

	/** A `browser_session:` target: a fresh remote-browser session (browser credits: not in the budget). */
	const runBrowserTarget = async (target: Target & { browserSession: NonNullable<Target["browserSession"]> }) => {
		const started = clock();
		if (stops.guardOutput(() => journal.started(target.id)) === undefined && stops.outputFailure) return;
		if (!parts.browser) throw new Error("a browser_session target needs the browser service's access");
		const { result, evaluated } = await fetchBrowserTarget(target, {
			access: parts.browser.access,
			sessions: parts.browser.sessions,
			retry: job.retry,
			clock,
			sleep: parts.sleep,
			random: parts.random,
			signal: stops.inflight,
			isStopping: () => stops.stopping,
			onRetry: parts.fetchDeps.onRetry,
		});
		if (result.kind === "aborted") {
			stops.stop(result.reason, `stopping: ${result.message}`);
			return;
		}
		if (result.kind === "abandoned") return;
		// `extract:` reads the final page's HTML, as for a scraper fetch (docs/guides/browser.md).
		const page = await readPage(target, result);
		if (page.abandoned) return;
		const record = addExtraction(
			fetchedRecord(target, result, result.creditsUsed ?? 0, started, clock(), parts.content),
			target,
			result,
			job,
			page.read,
		);
		if (page.tooComplex !== undefined) markTooComplex(record, page.tooComplex);
		if (evaluated.length > 0)
			record.data = { ...record.data, evaluate: evaluated.length === 1 ? evaluated[0] : evaluated };
		judgeUseful(record, target, result, job, page.read);
		// As a fetched page's: a crawl follows the final page's links (they go to the frontier first).
		commitFetched(target, result, record, page);
	};

	/**
	 * A fetch that came to no answer: what its failed attempts were charged is still spent. `onRecord`: a
	 * climb's fetch whose charge went on the record of the rung before (counted with that record).
	 */
	const bookWithoutRecord = (targetId: string, worstCase: number, charged: number, onRecord = false) => {
		if (charged === 0) {
			budget.release(worstCase, targetId);
			return;
		}
		budget.commit(worstCase, charged, targetId);
		if (!onRecord) stats.chargedWithoutRecord(charged);
	};

	/** Adaptive targets of a job built without economics (a library caller's): a ladder that remembers nothing. */
	let ownAdaptive: AdaptiveModes | null = null;
	const adaptiveModes = (): AdaptiveModes => {
		const given = parts.economics?.adaptive;
		if (given) return given;
		ownAdaptive ??= createAdaptiveModes([]);
		return ownAdaptive;
	};

	/**
	 * `mode: adaptive` past its first fetch (adaptive-mode.ts): while the record is useless in a way a
	 * stronger rung can fix, the next rung is booked (its own worst case) and fetched — a new fetch, paid
	 * again; the record written is the last one, with every rung's credits and attempts. A stronger fetch
	 * that comes to no answer (a stop, an abort) leaves the record of the one before it written, and its
	 * own outcome to the caller.
	 */
	const climb = async (
		target: Target,
		step: ClimbStep,
		first: Extract<FetchResult, { kind: "ok" | "failed" }>,
		firstCharged: number,
		/** What this process paid for `first` (its credits less what earlier processes were charged for it). */
		firstPaid: number,
		started: number,
		/** The domain's breaker opened since the target was admitted (it is not its probe): no stronger fetch. */
		heldBack: () => boolean,
	): Promise<{
		record: ResultRecord | undefined;
		cost: TargetCost;
		after?: { result: FetchResult; worstCase: number; onRecord: boolean };
		/** The last fetch that answered: a record that could not be written leaves its charge to the journal. */
		answer: Extract<FetchResult, { kind: "ok" | "failed" }>;
	}> => {
		const { modes, domain, ladder } = step;
		let current = first;
		let total = firstCharged;
		let last = firstCharged;
		let earlierAttempts = 0;
		const from = step.at;
		// Each fetch's charge, from the starting rung up: the forecast costs the target from the rung its next run starts on.
		const charges = [firstCharged];
		for (;;) {
			const built = pagePool
				? await readFetched(target, current, total, started)
				: withoutPage(buildFetched(target, current, total, started, NO_PAGE));
			const rung = ladder[step.at]!;
			const cost = { total, first: firstCharged, last, climb: { domain, ladder, from, charges } };
			if (built === undefined) return { record: undefined, cost, answer: current };
			built.record.attempts += earlierAttempts;
			built.record.mode_used = adaptiveModeUsed(current.modeUsed, rung);
			const fixable = modes.fixable(built.record);
			const atTop = step.at >= ladder.length - 1;
			if (fixable && !atTop && !modes.isHopeless(domain) && !stops.stopping && !heldBack()) {
				// Another target of the domain may have found a stronger rung useful meanwhile (fetches in flight): the
				// rungs below it are known not to be, and are not paid for again.
				const nextStep = Math.max(step.at + 1, modes.firstStep(domain, ladder));
				const next = ladder[nextStep]!;
				const params = modes.paramsOf(target.params, next);
				const worstCase = creditCostRange(params).max;
				if (budget.tryReserve(worstCase, target.id) || (await reserveOrStop(budget, stops, worstCase, target.id))) {
					// The answer left behind is paid and gets no record unless the climb ends: its charge (unless its
					// `paid` line holds it) and the rung climbed to are journalled, so a process killed meanwhile
					// leaves a resume that counts it and goes on from the next rung, not paying this one again.
					const heldByPaidLine = built.kept || restored.has(target.id);
					settleKept(target, built.kept);
					if (!heldByPaidLine)
						journalCharge(target.id, (current === first ? firstPaid : last) - (current.chargedBefore ?? 0));
					stops.guardCharge(() => journal.climbed(target.id, rungName(next)));
					log.info(
						{ event: "mode_upgrade", id: target.id, domain, from: rungName(rung), to: rungName(next) },
						`${built.record.useless_reason ?? "useless"}: fetched again as ${rungName(next)}`,
					);
					earlierAttempts = built.record.attempts;
					const skipped = nextStep - step.at - 1;
					step.at = nextStep;
					const result = await fetchTarget(target.id, params, fetchDeps, null, parts.bodySpill);
					if (result.kind === "ok" || result.kind === "failed") {
						last = result.creditsUsed ?? worstCase;
						budget.commit(worstCase, last, target.id);
						total += last;
						// A rung passed over cost this target nothing.
						for (let index = 0; index < skipped; index++) charges.push(0);
						charges.push(last);
						current = result;
						continue;
					}
					// What it was charged goes on the record written instead — its failed attempts, and an answer paid
					// whose page could not be written (its worst case when it said nothing): a resume, which counts a
					// recorded target's credits from its record and not its `charged` lines, keeps them.
					const unanswered =
						result.kind === "output_failed" ? result.charged + (result.answer ?? worstCase) : result.charged;
					built.record.credits_used += unanswered;
					const record = commitRead(target, current, built);
					if (record) modes.settle(domain, rung, record, false);
					return { record, cost, after: { result, worstCase, onRecord: record !== undefined }, answer: current };
				}
			}
			const record = commitRead(target, current, built);
			if (record) modes.settle(domain, rung, record, fixable && atTop);
			return { record, cost, answer: current };
		}
	};

	/** An answer that became no record (an abort, a stop, an unwritable page): booked, and the run told. */
	const settleUnwritten = (
		targetId: string,
		result: Exclude<FetchResult, { kind: "ok" | "failed" }>,
		worstCase: number,
		onRecord = false,
	) => {
		switch (result.kind) {
			case "aborted":
				bookWithoutRecord(targetId, worstCase, result.charged, onRecord);
				stops.stop(result.reason, `stopping: ${result.message}`);
				return;
			case "output_failed": {
				// The answer came (and was paid) but its page could not be written: no record, the run stops. A
				// cost the answer did not say is its worst case, as for any answer. A climb's (`onRecord`) is on
				// the record of the rung before, counted with it.
				const answer = result.answer ?? worstCase;
				budget.commit(worstCase, result.charged + answer, targetId);
				if (!onRecord) {
					stats.chargedWithoutRecord(result.charged + answer);
					journalCharge(targetId, answer);
				}
				stats.abandoned += 1;
				stops.guardOutput(() => {
					throw new OutputError(result.path, result.cause);
				});
				return;
			}
			case "abandoned":
				bookWithoutRecord(targetId, worstCase, result.charged, onRecord);
				if (result.taskId) stats.tasks.leftPending += 1;
				// Sent but given up (a stop past its grace period): the service may still charge it. A lease that
				// lapsed before a send, or a stop between attempts, left nothing in flight.
				if (result.attempts > 0 && result.leaseLapsed !== true && result.betweenAttempts !== true) stats.abandoned += 1;
				return;
			default: {
				const unreachable: never = result;
				throw new Error(`unhandled result ${JSON.stringify(unreachable)}`);
			}
		}
	};

	/** `mode: adaptive`: the first fetch goes on the domain's starting rung (adaptive-mode.ts). */
	const firstStep = (target: Target): ClimbStep => {
		const modes = adaptiveModes();
		const domain = modes.domainOf(target.url);
		const ladder = modes.ladderOf(target.params);
		const at = modes.firstStep(domain, ladder);
		// An earlier process paid the rungs below the one it climbed to: the climb goes on from there.
		const climbed = parts.resumeClimbs.size === 0 ? undefined : parts.resumeClimbs.get(target.id);
		const resumed = climbed === undefined ? -1 : ladder.findIndex((rung) => rungName(rung) === climbed);
		return { modes, domain, ladder, at: Math.max(at, resumed) };
	};

	/** A written record's outcomes: its costs learnt, its domain's breaker, the paid-failures stop, run.log. */
	const recorded = (
		target: Target,
		record: ResultRecord,
		charged: number,
		cost: TargetCost | null,
		// Positional, not an object: this runs once a target.
		domain: string,
		probe: boolean,
	) => {
		parts.economics?.costs.add(
			target.url,
			cost?.total ?? charged,
			cost?.first ?? charged,
			cost?.last ?? charged,
			creditCostRange(target.params),
			cost?.climb,
		);
		parts.breakers?.settle(domain, record, probe);
		const paidFailure = paidFailures.record(record.status, record.error, record.credits_used);
		if (paidFailure !== null) stopOnPaidFailures(paidFailure);
		if (record.status === "failed") {
			// A failed answer's balance came with its error, which feeds no onHeaders: the summary learns it here.
			if (record.credits_remaining !== null) stats.creditsSeen(record.credits_remaining);
			log.info(
				{
					event: "target_failed",
					id: target.id,
					error: record.error,
					http_status: record.http_status,
					attempts: record.attempts,
				},
				record.message ?? "failed",
			);
		}
	};

	const run = async (target: Target) => {
		if (stops.stopping) return;
		if (target.browserSession) return runBrowserTarget(target as Parameters<typeof runBrowserTarget>[0]);
		const step = target.params.mode === "adaptive" ? firstStep(target) : null;
		const params = step === null ? target.params : step.modes.paramsOf(target.params, step.ladder[step.at]!);
		const worstCase = creditCostRange(params).max;
		// An open breaker parks the target: no fetch, no credit, no record (`--resume` takes it). One look-up.
		const breakers = parts.breakers;
		const domain = breakers === null ? "" : breakers.keyOf(target.url);
		// An answer an earlier process paid for is read back, not fetched: no breaker holds it back.
		const paid = parts.resumePaid.size === 0 ? undefined : parts.resumePaid.get(target.id);
		const kept = paid === undefined ? null : parts.paidAnswers.restore(paid, job.maxBodyBytes);
		let admission = breakers === null || kept !== null ? "fetch" : breakers.admit(domain, worstCase, target.id);
		if (typeof admission !== "string") {
			admission = await admission;
			// Waited for a probe or a fleet's row: a stop meanwhile leaves the target to `--resume`.
			if (stops.stopping && admission !== "park") {
				if (admission === "probe") breakers?.probeLost(domain, target.id);
				return;
			}
		}
		if (admission === "park") return;
		if (admission === "fetch") return fetchAdmitted(target, step, params, worstCase, domain, false, kept);
		// The domain's other targets wait for the probe: one that ends in an error is lost, not left pending.
		try {
			await fetchAdmitted(target, step, params, worstCase, domain, true, kept);
		} catch (error) {
			breakers?.probeLost(domain, target.id);
			throw error;
		}
	};

	/** A target the breaker let through (`probe`: as its half-open probe): booked, fetched, its record written. */
	const fetchAdmitted = async (
		target: Target,
		step: ClimbStep | null,
		params: Target["params"],
		worstCase: number,
		domain: string,
		probe: boolean,
		/** The answer an earlier process paid for, read back from `paid/`. */
		kept: ReturnType<PaidAnswers["restore"]>,
	) => {
		const breakers = parts.breakers;
		// No record when it does not fit: the target is left for `--resume --max-credits <larger>`.
		// Booked at once when it fits (nearly always): the wait for other fetches to settle is the rare case.
		if (!budget.tryReserve(worstCase, target.id) && !(await reserveOrStop(budget, stops, worstCase, target.id))) {
			if (probe) breakers?.probeLost(domain, target.id);
			return;
		}
		const started = clock();
		if (stops.guardOutput(() => journal.started(target.id)) === undefined && stops.outputFailure) {
			budget.release(worstCase, target.id);
			if (probe) breakers?.probeLost(domain, target.id);
			return;
		}
		if (kept !== null) restored.add(target.id);
		const result =
			kept ??
			(await fetchTarget(target.id, params, fetchDeps, parts.resumeTasks.get(target.id) ?? null, parts.bodySpill));
		if (probe && result.kind !== "ok" && result.kind !== "failed") breakers?.probeLost(domain, target.id);
		if (result.kind !== "ok" && result.kind !== "failed") {
			settleUnwritten(target.id, result, worstCase);
			return;
		}
		// An ok fetch whose cost went unreported (or came back negative or garbled) is booked at its worst case.
		// A kept answer read back was paid by an earlier session: in `earlier`.
		const paidNow = kept === null ? (result.creditsUsed ?? worstCase) : 0;
		budget.commit(worstCase, paidNow, target.id);
		// What earlier sessions were charged for the target, spent already: its record carries it. One look-up
		// of an empty map for nearly every run.
		const earlier = parts.resumeCharged.size === 0 ? 0 : (parts.resumeCharged.get(target.id) ?? 0);
		const charged = paidNow + earlier;
		// What the target cost: one fetch, unless it climbed (no object per target for the usual case).
		let cost: TargetCost | null = null;
		let after: { result: FetchResult; worstCase: number; onRecord: boolean } | undefined;
		let record: ResultRecord | undefined;
		let answer = result;
		if (step !== null) {
			const heldBack = () => !probe && breakers !== null && breakers.isOpen(domain);
			({ record, cost, after, answer } = await climb(target, step, result, charged, paidNow, started, heldBack));
		} else {
			// Without a page pool the record is written in this turn: no promise, no microtask per target.
			record = pagePool
				? await writeReadFetched(target, result, charged, started)
				: writeFetched(target, result, charged, started, NO_PAGE);
		}
		if (record) {
			recorded(target, record, charged, cost, domain, probe);
			if (earlier !== 0) {
				stats.earlierChargesRecorded(earlier);
				parts.economics?.costs.paidEarlier(earlier);
			}
		} else {
			stats.abandoned += 1;
			// Paid and left without a record (its page read cut off by a stop): spent all the same.
			const unrecorded = (cost?.total ?? charged) - earlier;
			if (unrecorded > 0) stats.chargedWithoutRecord(unrecorded);
			// The last answer's charge, unless its kept answer's `paid` line holds it; its failed attempts are journalled.
			if (!paidLines.delete(target.id)) {
				const answerPaid = answer === result ? paidNow : (cost?.last ?? 0);
				journalCharge(target.id, answerPaid - (answer.chargedBefore ?? 0));
			}
			if (probe) breakers?.probeLost(domain, target.id);
		}
		if (after !== undefined && after.result.kind !== "ok" && after.result.kind !== "failed")
			settleUnwritten(target.id, after.result, after.worstCase, after.onRecord);
	};

	const followStoredPage = async (target: Target) => {
		const html = storedPageHtml(target, job.maxBodyBytes);
		if (html === null || !pagePool || !crawler) return;
		const wantsLinks = target.crawl !== undefined && target.crawl.depth < maxDepth;
		let links: readonly string[] | null = null;
		if (wantsLinks) {
			try {
				const url = target.crawl?.storedLanding ?? target.url;
				links = (await pagePool.run({ html, url, plan: null, links: true }, stops.inflight)).links ?? null;
			} catch {
				// Too complex or stopped: the page stays fresh, its links unread.
				return;
			}
		}
		noteLinksCut(target, links);
		stops.guardOutput(() => crawler.pageFetched(target, links));
	};

	/** A page with more links than one page's bound: said in run.log, since the links past it are not followed. */
	const noteLinksCut = (target: Target, links: readonly string[] | null) => {
		if (links === null || links.length < MAX_PAGE_LINKS) return;
		const url = maskUrlCredentials(target.url);
		log.warn(
			{ event: "page_links_cut", id: target.id, url, links: links.length },
			`${url}: its first ${MAX_PAGE_LINKS.toLocaleString("en-US")} links are followed; any past them are left out`,
		);
	};

	return { run, followStoredPage, chargedRetry: fetchDeps.chargedRetry! };
}
