/**
 * Running saved schedules: an active schedule runs its config every `interval_minutes` (first at
 * `start_time` when that is ahead), each run a scrape of the config's `url` at the normal rate,
 * charged on a ledger entry of its own (`schedule-run`) and kept as a run record. A failed run pauses
 * a schedule with `stop_on_error`. One scenario minute (`schedule_minute_ms`) stands for one minute,
 * so tests can watch runs happen; `next_run` is in service time.
 */
import type { Mode } from "../common/index.js";
import type { EmulatorContext } from "./context.js";
import { isTruthy } from "./http-io.js";
import { newId, type Schedule, type ScheduleRun } from "./saved-items.js";
import { resolveSavedReferences } from "./saved-references.js";
import { scrapeInBackground } from "./scrape-start.js";

const MINUTE_MS = 60_000;
/** Runs kept per schedule (oldest dropped first). */
const MAX_RUNS = 1000;

export class ScheduleTimers {
	readonly #timers = new Map<string, NodeJS.Timeout>();

	set(id: string, timer: NodeJS.Timeout): void {
		this.clear(id);
		this.#timers.set(id, timer);
	}

	clear(id: string): void {
		clearTimeout(this.#timers.get(id));
		this.#timers.delete(id);
	}

	close(): void {
		for (const timer of this.#timers.values()) clearTimeout(timer);
		this.#timers.clear();
	}
}

/** (Re)plan a schedule's next run from now: at `start_time` when that is ahead, else one interval on. */
export function armSchedule(ctx: EmulatorContext, schedule: Schedule): void {
	ctx.scheduleTimers.clear(schedule.id);
	if (!schedule.is_active || ctx.signal.aborted) {
		schedule.next_run = null;
		return;
	}
	const nowMs = ctx.clock();
	const startMs = schedule.start_time === null ? Number.NaN : Date.parse(schedule.start_time);
	const dueMs = schedule.last_run === null && startMs > nowMs ? startMs : nowMs + schedule.interval_minutes * MINUTE_MS;
	schedule.next_run = new Date(dueMs).toISOString();
	const delayMs = ((dueMs - nowMs) / MINUTE_MS) * ctx.config.scheduleMinuteMs;
	const timer = setTimeout(() => {
		ctx.scheduleTimers.clear(schedule.id);
		void runSchedule(ctx, schedule);
	}, delayMs);
	// A schedule never holds a process open (as tasks do not).
	timer.unref();
	ctx.scheduleTimers.set(schedule.id, timer);
}

export function runsOf(ctx: EmulatorContext, scheduleId: string): ScheduleRun[] {
	let runs = ctx.saved.runs.get(scheduleId);
	if (!runs) {
		runs = [];
		ctx.saved.runs.set(scheduleId, runs);
	}
	return runs;
}

/** One run, then the next one planned (unless the schedule was paused, stopped or deleted meanwhile). */
export async function runSchedule(ctx: EmulatorContext, schedule: Schedule): Promise<void> {
	const config = ctx.saved.configs.get(schedule.config_id);
	const resolved = resolveSavedReferences(ctx.saved, config?.config ?? {});
	const url = typeof resolved.params.url === "string" ? resolved.params.url : "";
	const run: ScheduleRun = {
		id: newId("run_"),
		schedule_id: schedule.id,
		status: "running",
		started_at: new Date(ctx.clock()).toISOString(),
		finished_at: null,
		url,
		credits_used: 0,
		status_code: null,
		error: null,
	};
	const runs = runsOf(ctx, schedule.id);
	runs.push(run);
	if (runs.length > MAX_RUNS) runs.shift();
	schedule.last_run = run.started_at;
	const entry = ctx.ledger.open("schedule-run", "RUN", `/api/v1/account/schedule/${schedule.id}/runs`);
	entry.url = url;
	const key = ctx.config.scraperKeys[0] as string;
	entry.key = key;
	if (!config || resolved.problems.length > 0 || url === "") {
		run.error = config
			? `The config cannot run: ${resolved.problems.join("; ") || "no url"}`
			: `Config ${schedule.config_id} no longer exists`;
		ctx.ledger.finish(entry, 422);
	} else {
		const mode = (resolved.params.mode ?? "auto") as Mode;
		entry.mode = mode;
		const outcome = await scrapeInBackground(ctx, {
			key,
			url,
			mode,
			datacenter: resolved.params.proxy_type === "datacenter",
			extraHeaders: null,
			entry,
		});
		switch (outcome.kind) {
			case "ok":
				run.credits_used = outcome.creditsUsed;
				run.status_code = outcome.statusCode;
				break;
			case "target-status":
				run.status_code = outcome.statusCode;
				run.error = `The page answered HTTP ${outcome.statusCode}`;
				break;
			default:
				run.error = outcome.message;
		}
		ctx.ledger.finish(entry, outcome.kind === "ok" ? 200 : outcome.kind === "target-status" ? outcome.statusCode : 500);
	}
	run.status = run.error === null ? "success" : "failed";
	run.finished_at = new Date(ctx.clock()).toISOString();
	schedule.last_status = run.status;
	if (run.status === "failed" && isTruthy(schedule.stop_on_error)) schedule.is_active = false;
	if (ctx.saved.schedules.get(schedule.id) === schedule) armSchedule(ctx, schedule);
}
