import { jsonlLines, parseJsonLine } from "../../common/index.js";
import type { DomainMode } from "../../history/index.js";
import { type AppendFile, openAppendFile } from "../../output/index.js";
import type { RunFigures, TimedFigures } from "../records/run-statistics.js";
import { MAX_CREDITS_PER_FETCH } from "./fetch-result.js";
import type { PaidAnswer } from "./paid-answers.js";

/**
 * `journal.jsonl`: what happened to targets between start and record, appended with synchronous
 * writes as it happens. Together with `results.jsonl` (the finished records) it is what `--resume`
 * reads: a target with a record is done; a target with a journalled task id is polled, not paid again.
 */
export type JournalEvent =
	| { e: "session"; run_id: string; at: string; resumed: boolean }
	| { e: "start"; id: string }
	| { e: "task"; id: string; task_id: string }
	| { e: "paid"; answer: PaidAnswer }
	| { e: "charged"; id: string; credits: number }
	| { e: "climb"; id: string; rung: string }
	| { e: "mode"; domain: string; mode: string; proxy_type: string; useful: boolean }
	| BreakerChange
	| FiguresLine;

/**
 * The run's figures that no record holds (wall time, 429 pauses, abandoned fetches, the account's
 * balance), every session included, written every few seconds: a resume of a process killed before its
 * summary carries them from its last such line.
 */
interface FiguresLine {
	e: "figures";
	at: string;
	wall_ms: number;
	rate_limit_pauses: number;
	abandoned: number;
	credits_remaining: number | null;
}

/**
 * A local run's breaker opening or closing (docs/behaviour.md, "Breakers"), with the fingerprint of the job
 * that judged it: a resume carries the breakers whose latest line is `open`, even when the process that
 * wrote it was killed before its summary.
 */
export type BreakerChange =
	| { e: "breaker"; domain: string; open: true; opened_at: string; reason: string; fingerprint: string }
	| { e: "breaker"; domain: string; open: false; fingerprint: string };

export interface Journal {
	session(runId: string, resumed: boolean): void;
	started(id: string): void;
	/** Written before the task is polled, so a crash while polling leaves the id for resume. */
	task(id: string, taskId: string): void;
	/** Written once a paid answer's body is kept and before its page is read: a resume reads it, never pays again. */
	paid(answer: PaidAnswer): void;
	/**
	 * A failed attempt of a target was charged and its fetch goes on (a retry) or ends without an answer (a
	 * stop), or a paid answer got no record (its page could not be written): a resume counts what the
	 * target's record does not hold yet. Rare: never written for a target fetched once.
	 */
	charged(id: string, credits: number): void;
	/**
	 * `mode: adaptive`: a target's fetch goes one rung up (`rung`, adaptive-mode.ts `rungName`). A resume of a
	 * target still without a record starts on it: the rungs below were paid already (their `charged` lines).
	 */
	climbed(id: string, rung: string): void;
	/**
	 * `mode: adaptive`: a domain's rung changed (or it was given up). A resume of a process killed before the
	 * run's end (which keeps it in the job's store) starts the domain there, not on the rung it paid to leave.
	 */
	learned(mode: DomainMode): void;
	/** A breaker opened or closed: a synchronous write, kept by a process killed right after. */
	breaker(change: BreakerChange): void;
	/** The run's figures as they stand at `atMs`: a bounded-rate line (the sync timer's), never per record. */
	figures(figures: RunFigures, atMs: number): void;
	sync(): void;
	close(): void;
}

/** Bytes of "start" lines gathered before they are written. */
const START_BUFFER_BYTES = 64 * 1024;
const START_PREFIX = '{"e":"start","id":';
/** Ids written as they are between quotes: nothing JSON would escape, one byte a character. */
const PLAIN_ID = /^[0-9A-Za-z._~-]*$/;
const QUOTE = 0x22;
const CLOSE_BRACE = 0x7d;
const NEWLINE = 0x0a;

export function openJournal(path: string): Journal {
	const file: AppendFile = openAppendFile(path);
	// "start" lines only explain a crash afterwards; resume does not need them. They are gathered in a
	// fixed buffer and written with the next line that matters (a task id), by the periodic sync, or
	// when the buffer is full: a system call saved per target, and no string per target left waiting
	// (a second's worth of them outlived young collections and reached the old space).
	const starts = Buffer.allocUnsafe(START_BUFFER_BYTES);
	let used = 0;
	const flush = () => {
		if (used === 0) return;
		const bytes = starts.subarray(0, used);
		used = 0;
		file.append(bytes);
	};
	const write = (event: JournalEvent) => {
		flush();
		file.appendLine(JSON.stringify(event));
	};
	return {
		session: (runId, resumed) => write({ e: "session", run_id: runId, at: new Date().toISOString(), resumed }),
		started: (id) => {
			// A derived id (16 hex digits) needs no escaping; a source's own id may need JSON's.
			const quoted = PLAIN_ID.test(id) ? null : JSON.stringify(id);
			const longest = START_PREFIX.length + 4 + (quoted === null ? id.length + 2 : Buffer.byteLength(quoted));
			if (used + longest > starts.length) flush();
			if (longest > starts.length) {
				file.append(`${START_PREFIX}${quoted ?? JSON.stringify(id)}}\n`);
				return;
			}
			used += starts.write(START_PREFIX, used, "latin1");
			if (quoted === null) {
				starts[used++] = QUOTE;
				used += starts.write(id, used, "latin1");
				starts[used++] = QUOTE;
			} else {
				used += starts.write(quoted, used, "utf8");
			}
			starts[used++] = CLOSE_BRACE;
			starts[used++] = NEWLINE;
		},
		task: (id, taskId) => write({ e: "task", id, task_id: taskId }),
		paid: (answer) => write({ e: "paid", answer }),
		charged: (id, credits) => write({ e: "charged", id, credits }),
		climbed: (id, rung) => write({ e: "climb", id, rung }),
		learned: ({ domain, mode, proxyType, useful }) => write({ e: "mode", domain, mode, proxy_type: proxyType, useful }),
		breaker: write,
		figures: (figures, atMs) =>
			write({
				e: "figures",
				at: new Date(atMs).toISOString(),
				wall_ms: figures.wallMs,
				rate_limit_pauses: figures.rateLimitPauses,
				abandoned: figures.abandoned,
				credits_remaining: figures.creditsRemaining,
			}),
		sync: () => {
			flush();
			file.sync();
		},
		close: () => {
			try {
				flush();
			} finally {
				file.close();
			}
		},
	};
}

/**
 * Read the task ids journalled for targets, ignoring a torn last line. Returns only the latest
 * task id per target; the caller drops those that have a record.
 */
export async function readJournalTasks(path: string): Promise<{
	tasks: Map<string, string>;
	paid: Map<string, PaidAnswer>;
	/**
	 * Credits each target's failed attempts were charged since its latest paid answer (which holds those
	 * before it). A record holds them too: the caller drops the targets that have one.
	 */
	charged: Map<string, number>;
	/** Each adaptive target's latest rung climbed to; the caller drops the targets that have a record. */
	climbs: Map<string, string>;
	/** Each adaptive domain's latest change in the run (its rung, or given up). */
	modes: Map<string, DomainMode>;
	started: number;
	/** Each domain's latest breaker line, in the order those lines were written. */
	breakers: Map<string, BreakerChange>;
	/** The latest well-formed figures line; null in a journal without one (an older version's). */
	figures: TimedFigures | null;
}> {
	const tasks = new Map<string, string>();
	const paid = new Map<string, PaidAnswer>();
	const charged = new Map<string, number>();
	const climbs = new Map<string, string>();
	const modes = new Map<string, DomainMode>();
	const breakers = new Map<string, BreakerChange>();
	let figures: TimedFigures | null = null;
	let started = 0;
	for (const { text } of jsonlLines(path)) {
		if (!text.endsWith("}")) continue;
		const event = parseJsonLine(text) as JournalEvent | null | undefined;
		if (typeof event !== "object" || event === null) continue;
		if (event.e === "task") tasks.set(event.id, event.task_id);
		else if (event.e === "start") started += 1;
		else if (event.e === "paid" && isPaidAnswer(event.answer)) {
			paid.set(event.answer.id, event.answer);
			charged.delete(event.answer.id);
		} else if (event.e === "charged" && isCharge(event))
			charged.set(event.id, (charged.get(event.id) ?? 0) + event.credits);
		else if (event.e === "climb" && typeof event.id === "string" && typeof event.rung === "string")
			climbs.set(event.id, event.rung);
		else if (event.e === "mode") {
			const mode = domainModeOf(event);
			if (mode !== null) modes.set(mode.domain, mode);
		} else if (event.e === "breaker" && isBreakerChange(event)) {
			// Re-inserted: the map's order stays the order of each domain's latest change.
			breakers.delete(event.domain);
			breakers.set(event.domain, event);
		} else if (event.e === "figures") figures = timedFigures(event) ?? figures;
	}
	return { tasks, paid, charged, climbs, modes, started, breakers, figures };
}

/** A journalled domain change read back, or null when it is not well-formed (the file is read from disk). */
function domainModeOf(line: { readonly e: "mode" }): DomainMode | null {
	const { domain, mode, proxy_type, useful } = line as Partial<Record<string, unknown>>;
	if (typeof domain !== "string" || typeof mode !== "string" || typeof proxy_type !== "string") return null;
	if (typeof useful !== "boolean") return null;
	return { domain, mode, proxyType: proxy_type, useful };
}

/** A figures line read back, or null when any of its figures is not a count (the file is read from disk). */
function timedFigures(line: { readonly e: "figures" }): TimedFigures | null {
	const { at, wall_ms, rate_limit_pauses, abandoned, credits_remaining } = line as Partial<Record<string, unknown>>;
	const count = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0;
	const atMs = typeof at === "string" ? Date.parse(at) : Number.NaN;
	if (!Number.isFinite(atMs) || !count(wall_ms) || !count(rate_limit_pauses) || !count(abandoned)) return null;
	if (credits_remaining !== null && !count(credits_remaining)) return null;
	return {
		atMs,
		figures: { wallMs: wall_ms, rateLimitPauses: rate_limit_pauses, abandoned, creditsRemaining: credits_remaining },
	};
}

function isCharge(line: { readonly e: "charged" }): line is { e: "charged"; id: string; credits: number } {
	const { id, credits } = line as Partial<Record<string, unknown>>;
	return typeof id === "string" && typeof credits === "number" && credits > 0 && credits <= MAX_CREDITS_PER_FETCH;
}

function isBreakerChange(value: { readonly e: "breaker" }): value is BreakerChange {
	const change = value as Partial<Record<string, unknown>>;
	if (typeof change.domain !== "string" || typeof change.fingerprint !== "string") return false;
	if (change.open === false) return true;
	return (
		change.open === true &&
		typeof change.reason === "string" &&
		typeof change.opened_at === "string" &&
		Number.isFinite(Date.parse(change.opened_at))
	);
}

/** A journal line read back is hostile like any file: only a well-formed answer is trusted. */
function isPaidAnswer(value: unknown): value is PaidAnswer {
	if (value === null || typeof value !== "object") return false;
	const answer = value as Partial<PaidAnswer>;
	return (
		typeof answer.id === "string" &&
		/^(?!\.{1,2}$)[A-Za-z0-9._-]{1,128}$/.test(answer.id) &&
		typeof answer.credits === "number" &&
		Number.isFinite(answer.credits) &&
		answer.credits >= 0 &&
		typeof answer.httpStatus === "number" &&
		typeof answer.attempts === "number"
	);
}
