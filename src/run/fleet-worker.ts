import type { Logger } from "pino";
import {
	type Clock,
	creditCostRange,
	errorMessage,
	type ScrapeParams,
	type Sleep,
	type TaskQueue,
	writeFileAtomic,
} from "../common/index.js";
import { readRobotsBody, type SitemapFetch } from "../crawl/index.js";
import type { ExtractPlan } from "../extract/index.js";
import {
	acquireSlots,
	addDiscovered,
	addListedPages,
	addProgress,
	claimRobots,
	claimTargets,
	completeTarget,
	type Fleet,
	type FleetLease,
	type FleetLimit,
	type FleetRun,
	type FleetSlot,
	type FleetTargetInput,
	type FleetWorker,
	fetchStarting,
	finishFleetRun,
	finishTarget,
	fleetStatus,
	isComplete,
	okTargetIds,
	onlyParkedLeft,
	parkTarget,
	pauseFleet,
	readProgress,
	releaseDueProbe,
	releaseSlot,
	releaseTarget,
	renewLeases,
	reserveCredits,
	setConcurrencyLimit,
	setHostPoliteness,
	settleExtraCredits,
	storeRobots,
	storeTaskId,
	targetCounts,
} from "../fleet/index.js";
import type { PreviousRecords, TargetHistory } from "../history/index.js";
import type { BreakerSpec, Job, Target } from "../job/index.js";
import type { FleetSummary, ResultRecord } from "../output/index.js";
import type { BreakerEvents, Breakers } from "./breaker.js";
import { type CreditBudget, createCreditBudget } from "./credit-budget.js";
import { createFleetBreakers } from "./fleet-breakers.js";
import type { FleetCrawl } from "./fleet-crawl.js";
import type { SitemapTaskStore } from "./fleet-sitemaps.js";
import { fromFleetLease, plansOf, sitemapOriginOf } from "./fleet-targets.js";
import type { StopController } from "./stop-controller.js";
import type { TargetRunner } from "./target-runner.js";

/** A worker's place in a fleet run, as `openFleetRun` gave it (docs/guides/fleet.md). */
export interface FleetWorkerSetup {
	readonly fleet: Fleet;
	readonly run: FleetRun;
	readonly worker: FleetWorker;
	/** The fleet run's budget (its `max_credits`), null without one. */
	readonly maxCredits: number | null;
	/** How long a claim and a slot last without renewal, ms. */
	readonly leaseMs: number;
}

/** A claimed target while this worker holds it. */
interface HeldTarget {
	readonly lease: FleetLease;
	readonly slot: FleetSlot;
	/** Local clock time until which the lease is surely still this worker's (a margin before the database's). */
	validUntil: number;
	/** The lease passed to another worker (a renewal no longer found it): nothing more is written for it. */
	lost: boolean;
	/** Credits its fetches were charged, settled with the target in one statement. */
	charged: number;
	/** Its record once written locally (scrubbed): it goes to the fleet's records when the target settles. */
	record: ResultRecord | null;
	/** Credits reserved on the lease for its first fetch and not booked by it yet (with a fleet budget). */
	prepaid: number;
	/** Parked behind its domain's open breaker: it settles parked, not back in the queue. */
	parked: { readonly domain: string; readonly worstCase: number } | null;
	/** A task of the fleet's own (a seed origin's sitemaps) ran to its end: it settles done, with no record. */
	finished: boolean;
}

/** Reads a seed origin's sitemaps for the fleet (fleet-sitemaps.ts); true when the task is done. */
export type SitemapTaskReader = (
	seed: Target,
	origin: string,
	plans: readonly ExtractPlan[],
	store: SitemapTaskStore,
) => Promise<boolean>;

/** A claim is trusted locally this much less than the database gives it: clocks of hosts drift apart. */
const LEASE_MARGIN_MS = 1000;
/** Longest wait before a worker with nothing claimable asks again (the fleet may be paused or finishing). */
const IDLE_POLL_MS = 250;
/** How often a worker looks whether another worker's 429 paused the fleet. */
const PAUSE_POLL_MS = 250;
/** Changes of the fleet's limit a worker remembers (each answer is placed under the one it was sent under). */
const KNOWN_LIMITS = 16;

/**
 * The run core's coordination parts on PostgreSQL, for one worker of a fleet run: where targets come
 * from (claims with leases instead of the job's sources), the budget (reserved in the database on the
 * target's lease), the concurrency limit (the fleet's slots, one held per target), politeness (claims
 * honour each host's clock), the task journal (a task id stored on the lease) and the fence (a record is
 * written only while its lease is this worker's). A lease is renewed on a timer: a worker that stops
 * renewing (killed, stalled) loses its targets to the others, and its late writes are refused.
 */
export function createFleetCoordination(
	setup: FleetWorkerSetup,
	deps: {
		readonly job: Job;
		readonly clock: Clock;
		readonly sleep: Sleep;
		readonly log: Logger;
		/** Change tracking is on: each claim brings the target's previous ok record. @default false */
		readonly tracksChanges?: boolean;
	},
) {
	const { fleet, worker, run, leaseMs } = setup;
	const { job, clock, sleep, log, tracksChanges = false } = deps;
	/** A crawl's links go to the fleet's frontier as their page settles (`useCrawl`). */
	let crawl: FleetCrawl | null = null;
	/** `sitemaps: true`: how this worker reads a seed origin's sitemaps when it claims that task. */
	let readSitemaps: SitemapTaskReader | null = null;
	/** Hosts may have a delay (the job's, or robots.txt's Crawl-delay): each fetch stamps its start. */
	const paced = (job.perHostDelayMs ?? 0) > 0 || job.crawl?.robots === "obey";
	const plans = plansOf(job);
	const held = new Map<string, HeldTarget>();
	/** Task ids an earlier holder stored: polled, not paid for again (the runner reads this map). */
	const tasks = new Map<string, string>();
	/** Change tracking: each held target's newest ok record in the job's earlier fleet runs (from its claim). */
	const previous = new Map<string, TargetHistory>();
	const previousData = new WeakMap<TargetHistory, unknown>();
	const claimOptions = tracksChanges ? { previousOf: run.jobName } : {};
	/** Writes about a target still on their way to the database: its settlement waits for them. */
	const pending = new Map<string, Promise<unknown>>();
	const margin = Math.min(LEASE_MARGIN_MS, leaseMs / 10);
	let fleetComplete = false;
	/** Where the fleet stood when this worker ended (read once, at `close`). */
	let ended: FleetSummary | null = null;
	let lastRenewal = clock();
	let renewFailure: string | null = null;
	let wakeFeeder: (() => void) | null = null;
	/**
	 * Slots this worker holds with no target on them: a settled target's slot goes to the next claim
	 * rather than back to the table (two statements saved a target); given back when a claim comes up short.
	 */
	const spare: FleetSlot[] = [];
	/**
	 * The fleet's limit as this worker last read it, and since when (on `clock`) it knew each of the latest
	 * changes: an answer may change the limit only from the change its fetch was sent under.
	 */
	const limits: Array<FleetLimit & { readonly knownSince: number }> = [];
	const learnLimit = (known: FleetLimit) => {
		const last = limits.at(-1);
		if (last && last.epoch >= known.epoch) return;
		limits.push({ ...known, knownSince: clock() });
		if (limits.length > KNOWN_LIMITS) limits.shift();
	};
	/** The change this worker knew of when it sent at `sentAt` (null: before any it still remembers). */
	const limitAt = (sentAt: number): FleetLimit | null => {
		for (let index = limits.length - 1; index >= 0; index--)
			if (limits[index]!.knownSince <= sentAt) return limits[index]!;
		return null;
	};
	/** This worker's changes of the fleet's limit, in the order its answers asked for them. */
	let limitWrites: Promise<void> = Promise.resolve();
	const aboveLimit = (): FleetSlot[] => {
		const known = limits.at(-1);
		if (known === undefined) return [];
		const ceiling = known.limit;
		const above = spare.filter((slot) => slot.slot >= ceiling);
		if (above.length > 0) spare.splice(0, spare.length, ...spare.filter((slot) => slot.slot < ceiling));
		return above;
	};
	const wake = () => {
		const resume = wakeFeeder;
		wakeFeeder = null;
		resume?.();
	};

	const later = (id: string, write: Promise<unknown>) => {
		const before = pending.get(id) ?? Promise.resolve();
		const chained = before
			.then(() => write)
			.catch((error) => log.warn({ event: "fleet_write", id, error: errorMessage(error) }, "fleet write failed"));
		pending.set(id, chained);
	};

	/** Extend this worker's leases; those a renewal no longer finds passed to another worker. */
	const renew = async () => {
		const started = clock();
		try {
			const still = new Set(await renewLeases(fleet, worker, leaseMs));
			lastRenewal = started;
			renewFailure = null;
			for (const [id, target] of held) {
				if (still.has(id)) target.validUntil = Math.max(target.validUntil, started + leaseMs - margin);
				else if (clock() > target.validUntil) target.lost = true;
			}
		} catch (error) {
			renewFailure = errorMessage(error);
			log.warn({ event: "fleet_renew_failed", error: renewFailure }, "could not renew the fleet leases");
		}
	};
	const renewTimer = setInterval(() => void renew(), Math.max(100, Math.floor(leaseMs / 3)));
	renewTimer.unref();

	/** What this worker does when another worker's 429 paused the fleet (`watchPause`). */
	let onFleetPause: ((ms: number) => void) | null = null;
	/**
	 * Another worker's 429 reaches this one within this long (its sends wait at its gate until the reset),
	 * and so does a change of the fleet's limit (spare slots above a lowered one go back).
	 */
	const watchRun = () =>
		fleet
			.query<{ ms: number | null; limit: number; epoch: string }>(
				`SELECT CASE WHEN paused_until > now() THEN (extract(epoch FROM paused_until - now()) * 1000)::int END AS ms,
					concurrency_limit AS limit, limit_epoch AS epoch
				FROM runs WHERE id = $1`,
				[run.id],
				"fleet_watch_run",
			)
			.then(([row]) => {
				if (!row) return;
				learnLimit({ limit: row.limit, epoch: Number(row.epoch) });
				if (row.ms != null && row.ms > 0) onFleetPause?.(row.ms);
			})
			.catch(() => undefined);
	void watchRun();
	const pauseTimer = setInterval(() => void watchRun(), PAUSE_POLL_MS);
	pauseTimer.unref();

	const mayWrite = (id: string): boolean => {
		const target = held.get(id);
		return target !== undefined && !target.lost && clock() < target.validUntil;
	};

	/**
	 * The runner's budget: a local ledger, the fleet's in the database. A target's first fetch was reserved on
	 * its lease before the runner got it (`reserveFor`); any other fetch — a re-fetch in a stronger mode, a
	 * crawl's robots.txt or sitemap file — is reserved on a lease too (the target's, else one this worker
	 * holds), so a worker that dies gives it back with the lease and the fleet never passes `max_credits`.
	 */
	const local = createCreditBudget(null);
	/** Reservations of fetches of no target, on the lease that holds them. */
	const untargeted: Array<{ readonly lease: FleetLease; readonly amount: number }> = [];
	const takeUntargeted = (amount: number) => {
		const index = untargeted.findIndex((booking) => booking.amount === amount);
		return index < 0 ? undefined : untargeted.splice(index, 1)[0];
	};
	const limited = setup.maxCredits !== null;
	const budget: CreditBudget = {
		tryReserve(worstCase, targetId) {
			const target = targetId === undefined ? undefined : held.get(targetId);
			if (!limited || (target !== undefined && target.prepaid >= worstCase)) {
				if (target) target.prepaid = 0;
				return local.tryReserve(worstCase);
			}
			return false;
		},
		async reserve(worstCase, isStopping, targetId) {
			if (!limited) return local.reserve(worstCase, isStopping);
			// A seed origin's sitemap task (depth -1) has its own first reservation: its first file takes it.
			const task =
				targetId === undefined
					? [...held.values()].find((target) => target.lease.depth < 0 && target.prepaid >= worstCase)
					: undefined;
			if (task) {
				task.prepaid = 0;
				untargeted.push({ lease: task.lease, amount: worstCase });
				return local.tryReserve(worstCase);
			}
			const holder =
				(targetId === undefined ? undefined : held.get(targetId)) ?? [...held.values()].find((target) => !target.lost);
			if (!holder || !(await waitForCredits(holder.lease, worstCase, isStopping))) return false;
			if (targetId === undefined) untargeted.push({ lease: holder.lease, amount: worstCase });
			return local.tryReserve(worstCase);
		},
		commit(reserved, actual, targetId) {
			local.commit(reserved, actual);
			const target = targetId === undefined ? undefined : held.get(targetId);
			if (target) target.charged += actual;
			// A fetch of no target's (a crawl's robots.txt, a sitemap): the fleet's spending all the same, and
			// its reservation leaves the lease that held it.
			else if (targetId === undefined && (actual > 0 || reserved > 0)) {
				const booking = reserved > 0 ? takeUntargeted(reserved) : undefined;
				later(
					"",
					booking
						? settleExtraCredits(fleet, booking.lease, booking.amount, actual)
						: fleet.query("UPDATE runs SET spent = spent + $2 WHERE id = $1", [run.id, actual]),
				);
			}
		},
		release(reserved, targetId) {
			local.release(reserved);
			const booking = targetId === undefined && reserved > 0 ? takeUntargeted(reserved) : undefined;
			if (booking) later("", settleExtraCredits(fleet, booking.lease, booking.amount, 0));
		},
		get spent() {
			return local.spent;
		},
		get reserved() {
			return local.reserved;
		},
		get dearest() {
			return local.dearest;
		},
		limit: setup.maxCredits,
		exhausted: (worstCase) => exhaustedMessage(null, worstCase),
	};
	const exhaustedMessage = (spent: number | null, worstCase: number) =>
		`stopping: the fleet's max_credits ${setup.maxCredits} reached (${spent === null ? "" : `${spent} spent; `}the next fetch may cost ${worstCase}); raise it with --max-credits <larger> and start workers again`;

	/** The target ends here: its record (or its return to the queue) and its credits in one statement. */
	const settle = async (id: string) => {
		const target = held.get(id);
		if (!target) return;
		// Its fetch is over: the slot goes to the next claim now, while this target's writes go out (the
		// claim and the completion overlap instead of following each other: a round trip less a target).
		held.delete(id);
		spare.push(target.slot);
		wake();
		await pending.get(id);
		try {
			// Links first, while the page is still leased: the run cannot complete between the two.
			const links = crawl ? await crawl.take(fromFleetLease(target.lease, plans), plans) : [];
			if (links.length > 0) await addDiscovered(fleet, target.lease, await withinMaxPages(await notFetchedOk(links)));
			const settled = target.record
				? await completeTarget(fleet, target.lease, target.record, target.charged)
				: target.finished
					? await finishTarget(fleet, target.lease, target.charged)
					: target.parked
						? await parkTarget(fleet, target.lease, target.parked.domain, target.parked.worstCase)
						: await releaseTarget(fleet, target.lease, { retry: true, credits: target.charged });
			if (!settled && target.record)
				log.warn(
					{ event: "fleet_fenced", id },
					"the target's lease passed to another worker: its record is not the fleet's",
				);
		} catch (error) {
			// The lease lapses and another worker takes the target (the database is the fleet's memory).
			log.warn({ event: "fleet_settle_failed", id, error: errorMessage(error) }, "could not settle a target");
		} finally {
			tasks.delete(id);
			pending.delete(id);
			previous.delete(id);
		}
	};

	/**
	 * Book `worstCase` of the fleet's budget on `lease`. While other fetches hold reservations that may cost
	 * less, it waits; false when no other fetch holds one and it does not fit (the budget is spent), or on a
	 * stop.
	 */
	const waitForCredits = async (lease: FleetLease, worstCase: number, isStopping: () => boolean): Promise<boolean> => {
		// Other fetches' reservations may themselves wait (a page's fetch waiting for the robots.txt this
		// reservation is for): past a lease with no room made, the budget counts as spent.
		let deadline = clock() + leaseMs;
		let room = Number.NaN;
		for (;;) {
			if (await reserveCredits(fleet, lease, worstCase)) return true;
			const [row] = await fleet.query<{ spent: string; reserved: string; mine: string | null }>(
				`SELECT r.spent, r.reserved, t.reserved AS mine FROM runs r
				LEFT JOIN targets t ON t.run_id = r.id AND t.target_id = $2 WHERE r.id = $1`,
				[run.id, lease.targetId],
				"fleet_budget",
			);
			// Only other fetches' reservations can make room: this lease's own wait for it to settle.
			const others = Number(row?.reserved ?? 0) - Number(row?.mine ?? 0);
			const spent = Number(row?.spent ?? 0);
			if (others <= 0 || spent + worstCase > (setup.maxCredits ?? 0) || isStopping()) return false;
			const left = (setup.maxCredits ?? 0) - spent - Number(row?.reserved ?? 0);
			if (left !== room) {
				room = left;
				deadline = clock() + leaseMs;
			} else if (clock() > deadline) return false;
			await sleep(IDLE_POLL_MS);
		}
	};

	/**
	 * The fleet's budget for one claimed target: its worst case reserved on its lease. While other fetches
	 * hold reservations that may cost less, it waits; when nothing is in flight and it does not fit, the
	 * budget is spent and the worker stops.
	 */
	const reserveFor = async (lease: FleetLease, worstCase: number, stops: StopController): Promise<boolean> => {
		// Nothing to book up front (no budget, or an adaptive target booking its own first rung).
		if (setup.maxCredits === null || worstCase === 0) return true;
		if (await waitForCredits(lease, worstCase, () => stops.stopping)) {
			const target = held.get(lease.targetId);
			if (target) target.prepaid = worstCase;
			return true;
		}
		if (!stops.stopping) {
			const [row] = await fleet.query<{ spent: string }>("SELECT spent FROM runs WHERE id = $1", [run.id]);
			stops.stop("budget_exhausted", exhaustedMessage(Number(row?.spent ?? 0), worstCase));
		}
		return false;
	};

	/** A retried crawl (`--retry-failed`) follows no link to a page whose newest fleet record is ok. */
	const notFetchedOk = async (links: readonly FleetTargetInput[]): Promise<readonly FleetTargetInput[]> => {
		if (!run.retryFailed) return links;
		const ok = await okTargetIds(
			fleet,
			run.jobName,
			links.map((link) => link.targetId ?? link.url),
		);
		return links.filter((link) => !ok.has(link.targetId ?? link.url));
	};

	/** Pages the frontier holds now (a sitemap task, depth -1, is none). */
	const frontierSize = async (): Promise<number> => {
		const [row] = await fleet.query<{ n: number }>(
			"SELECT count(*)::int AS n FROM targets WHERE run_id = $1 AND depth >= 0",
			[run.id],
			"fleet_frontier_size",
		);
		return row?.n ?? 0;
	};

	/**
	 * What a target's first fetch may cost, reserved before the runner gets it. An adaptive target's first
	 * mode is the runner's choice: it reserves its own rung's worst case on the lease when it starts.
	 */
	const firstWorstCase = (params: ScrapeParams): number =>
		params.mode === "adaptive" ? 0 : creditCostRange(params).max;

	/** A crawl's `max_pages` is the fleet's: the frontier never grows past it. */
	const withinMaxPages = async <T>(links: readonly T[]): Promise<readonly T[]> => {
		const maxPages = job.crawl?.maxPages;
		if (maxPages === undefined) return links;
		return links.slice(0, Math.max(0, maxPages - (await frontierSize())));
	};

	/** A sitemap task's writes, each under its lease: journal lines on its row, listed pages into the frontier. */
	const sitemapStore = (lease: FleetLease): SitemapTaskStore => ({
		progress: () => readProgress(fleet, lease),
		note: (steps) => addProgress(fleet, lease, steps),
		async addPages(pages) {
			const added = await addListedPages(fleet, lease, await withinMaxPages(pages));
			if (added === null) return null;
			const maxPages = job.crawl?.maxPages;
			return maxPages === undefined ? Number.POSITIVE_INFINITY : maxPages - (await frontierSize());
		},
	});

	/** Read the sitemaps a claimed task names; true when they are read (the task then settles done). */
	const sitemapTask = async (lease: FleetLease, seed: Target, origin: string): Promise<boolean> => {
		if (readSitemaps === null) return false;
		try {
			return await readSitemaps(seed, origin, plans, sitemapStore(lease));
		} catch (error) {
			// Back to the queue: the next holder goes on from the files noted read.
			log.warn({ event: "fleet_sitemaps_failed", origin, error: errorMessage(error) }, "could not read the sitemaps");
			return false;
		}
	};

	/** Wait until a held target settles, or `ms` passes. */
	const pauseFeeder = (ms: number) =>
		new Promise<void>((resolve) => {
			const timer = setTimeout(() => {
				wakeFeeder = null;
				resolve();
			}, ms);
			wakeFeeder = () => {
				clearTimeout(timer);
				resolve();
			};
		});

	/**
	 * Claim targets into the queue, as many as there are free places in it and free fleet slots, until the
	 * fleet run is complete or the worker stops. A slot is taken before the claim: a claim is the permission
	 * to start a host's fetch now (its politeness clock moved on), so nothing may hold it back afterwards.
	 */
	const feed = async (parts: {
		readonly queue: TaskQueue;
		readonly runner: TargetRunner;
		readonly stops: StopController;
		readonly concurrency: number;
	}): Promise<void> => {
		const { queue, runner, stops, concurrency } = parts;
		stops.onStop(wake);
		while (!stops.stopping) {
			if (renewFailure !== null && clock() - lastRenewal > leaseMs) {
				stops.stop("fleet_unavailable", `stopping: the fleet's database stopped answering (${renewFailure})`);
				break;
			}
			const free = concurrency - held.size;
			if (free <= 0) {
				await pauseFeeder(IDLE_POLL_MS);
				continue;
			}
			let claimed: Array<{ lease: FleetLease; slot: FleetSlot }>;
			const started = clock();
			try {
				// Spare slots above a lowered limit go back: the fleet's ceiling is the table's, not this worker's.
				for (const slot of aboveLimit()) await releaseSlot(fleet, slot);
				const slots = spare.splice(0, free);
				if (slots.length < free) slots.push(...(await acquireSlots(fleet, worker, free - slots.length, leaseMs)));
				const leases = slots.length === 0 ? [] : await claimTargets(fleet, worker, slots.length, leaseMs, claimOptions);
				// Slots without a target go back: another worker may have targets for them.
				for (const slot of slots.slice(leases.length)) await releaseSlot(fleet, slot);
				claimed = leases.map((lease, index) => ({ lease, slot: slots[index]! }));
			} catch (error) {
				renewFailure = errorMessage(error);
				log.warn({ event: "fleet_claim_failed", error: renewFailure }, "could not claim targets");
				await pauseFeeder(IDLE_POLL_MS);
				continue;
			}
			if (claimed.length === 0) {
				if (held.size === 0 && (await isComplete(fleet, run.id))) {
					fleetComplete = await finishFleetRun(fleet, run.id);
					if (fleetComplete) break;
				}
				// Only parked targets left: a breaker whose cool-down passed sends one as its probe, else the
				// worker ends with its breakers open (as a local run does: `--continue` takes them later).
				if (held.size === 0 && breakers !== null) {
					if ((await releaseDueProbe(fleet, run.id, breakers.coolDownMs)) > 0) continue;
					if (await onlyParkedLeft(fleet, run.id)) break;
				}
				await pauseFeeder(IDLE_POLL_MS);
				continue;
			}
			for (const { lease, slot } of claimed) {
				held.set(lease.targetId, {
					lease,
					slot,
					validUntil: started + leaseMs - margin,
					lost: false,
					charged: 0,
					record: null,
					parked: null,
					finished: false,
					prepaid: 0,
				});
				if (lease.taskId !== null) tasks.set(lease.targetId, lease.taskId);
				if (lease.previousOk) {
					const entry: TargetHistory = {
						latest: "ok",
						okAt: Date.parse(lease.previousOk.finishedAt),
						okHash: lease.previousOk.contentHash,
						okRun: null,
						okOffset: -1,
					};
					previous.set(lease.targetId, entry);
					previousData.set(entry, lease.previousOk.data);
				}
				const target = fromFleetLease(lease, plans);
				const sitemaps = sitemapOriginOf(lease);
				queue.add(async () => {
					try {
						if (await reserveFor(lease, firstWorstCase(target.params), stops)) {
							// A delayed host's next claim waits a delay from now, when this fetch starts.
							if (paced) await fetchStarting(fleet, lease);
							if (sitemaps === null) await runner.run(target);
							else if (await sitemapTask(lease, target, sitemaps)) {
								const holding = held.get(lease.targetId);
								if (holding) holding.finished = true;
							}
						}
					} finally {
						await settle(lease.targetId);
					}
				});
			}
		}
		// A stop: claimed targets the queue dropped never started; they go back for the others now.
		await queue.onIdle();
		for (const id of [...held.keys()]) await settle(id);
		for (const slot of spare.splice(0)) await releaseSlot(fleet, slot).catch(() => false);
	};

	/** The fleet's breakers (`breaker:`), when the job has them. */
	let breakers: FleetBreakers | null = null;

	return {
		budget,
		tasks,
		feed,
		/** Change tracking's previous records: the fleet's, as each target's claim brought them. */
		previousRecords: {
			previous: (id: string) => previous.get(id) ?? null,
			readOkRecord: (entry: TargetHistory) => {
				const data = previousData.get(entry);
				return data === undefined ? null : ({ data } as ResultRecord);
			},
		} satisfies PreviousRecords,
		/** The job's breakers, one row per domain in the fleet: parked targets wait there, not in the queue. */
		useBreakers(spec: BreakerSpec, events: BreakerEvents): Breakers {
			breakers = createFleetBreakers(
				spec,
				{
					fleet,
					runId: run.id,
					track: later,
					park(targetId, domain, worstCase) {
						const target = held.get(targetId);
						if (target) target.parked = { domain, worstCase };
					},
				},
				events,
			);
			breakers.start();
			return breakers;
		},
		/** A crawl job: pages' links go to the fleet's frontier. */
		useCrawl(fleetCrawl: FleetCrawl, sitemapReader: SitemapTaskReader | null = null): void {
			crawl = fleetCrawl;
			readSitemaps = sitemapReader;
		},
		/**
		 * robots.txt once per fleet run: the first worker to ask for an origin's fetches it (through
		 * `fetch`, paid once) and stores it in the database; the others wait for it and read it from there.
		 */
		sharedRobots(fetch: SitemapFetch, isStopping: () => boolean): SitemapFetch {
			return async (url, seed, path) => {
				const parsed = new URL(url);
				// Keyed without the seed's credentials: the table is read by every worker.
				const key = `${parsed.origin}${parsed.pathname}`;
				for (;;) {
					const claim = await claimRobots(fleet, run.id, key, worker.id, leaseMs);
					if (claim === "mine") {
						const fetched = await fetch(url, seed, path);
						// Not fetched (a stop): the claim lapses and another worker fetches it.
						if (fetched.kind === "stopped") return fetched;
						await storeRobots(fleet, run.id, key, fetched.kind === "stored" ? readRobotsBody(path).body : null);
						return fetched;
					}
					if (claim.state === "done") {
						if (claim.body === null) return { kind: "missing", credits: 0 };
						writeFileAtomic(path, claim.body);
						return { kind: "stored", credits: 0 };
					}
					if (isStopping()) return { kind: "stopped" };
					await sleep(IDLE_POLL_MS);
				}
			};
		},
		/**
		 * The service's `X-RateLimit-Limit` on an answer to a fetch sent at `sentAt`: the fleet's limit follows
		 * it up and down (never above the job's own `concurrency`), as a learned local run's does. Written
		 * only while the limit is still the one the fetch was sent under: answers arrive out of order, and
		 * one that left the service before the limit's last change must not undo it.
		 */
		rateLimitSeen(limit: number | undefined, sentAt: number): void {
			if (limit === undefined || !Number.isSafeInteger(limit) || limit < 1) return;
			const next = typeof job.concurrency === "number" ? Math.min(job.concurrency, limit) : limit;
			const sentUnder = limitAt(sentAt);
			if (sentUnder === null || next === limits.at(-1)?.limit) return;
			// One at a time: a change this worker made is known before its next answer is weighed.
			limitWrites = limitWrites
				.then(() => setConcurrencyLimit(fleet, run.id, next, sentUnder.epoch))
				.then((changed) => {
					if (changed) learnLimit(changed);
				})
				.catch((error) => log.warn({ event: "fleet_write", error: errorMessage(error) }, "fleet write failed"));
		},
		/** A host's robots.txt `Crawl-delay`: the fleet's delay for it (never below the job's). */
		crawlDelay(host: string, delayMs: number): void {
			later("", setHostPoliteness(fleet, run.id, host, { delayMs, maxInFlight: job.perHostConcurrency ?? null }));
		},
		/** The record fence: asked right before a record's first byte and again after its last. */
		mayWrite,
		/** A record written locally: it goes to the fleet when its target settles. */
		written(record: ResultRecord): void {
			const target = held.get(record.id);
			if (target) target.record = record;
		},
		/** An async task's id: stored on the lease before it is waited on, so a successor polls it. */
		taskStarted(targetId: string, taskId: string): void {
			const target = held.get(targetId);
			if (target) later(targetId, storeTaskId(fleet, target.lease, taskId));
		},
		/** Another worker's 429: `pause` holds this worker's sends (its gate) until the reset. */
		watchPause(pause: (ms: number) => void): void {
			onFleetPause = pause;
		},
		/** A 429: every worker of the fleet waits until its reset (no claim, no slot before then). */
		paused(pauseMs: number): void {
			void pauseFleet(fleet, run.id, new Date(Date.now() + pauseMs)).catch((error) =>
				log.warn({ event: "fleet_pause_failed", error: errorMessage(error) }, "could not pause the fleet"),
			);
		},
		get complete() {
			return fleetComplete;
		},
		/** The fleet's limit and its change count as this worker last read them (null: not yet). */
		get limit(): FleetLimit | null {
			const known = limits.at(-1);
			return known ? { limit: known.limit, epoch: known.epoch } : null;
		},
		/** Where the fleet stood when this worker ended, for its summary; null before `close`. */
		get ended() {
			return ended;
		},
		/** The worker's work is over: stop renewing, and read where the whole fleet stands. */
		async close(): Promise<void> {
			clearInterval(renewTimer);
			clearInterval(pauseTimer);
			await breakers?.stop();
			// Its changes of the limit are in before the fleet's state is read for the summary.
			await limitWrites;
			const status = await fleetStatus(fleet, run.id).catch(() => null);
			ended = {
				run: run.runName,
				worker: worker.id,
				targets: targetCounts(status?.targets ?? { queued: 0, leased: 0, done: 0, failed: 0, parked: 0 }),
				credits_spent: status?.credits.spent ?? 0,
				max_credits: setup.maxCredits,
			};
		},
	};
}

export type FleetCoordination = ReturnType<typeof createFleetCoordination>;

type FleetBreakers = ReturnType<typeof createFleetBreakers>;
