import type { ClaimOptions, FleetLease } from "../../fleet/index.js";
import type { PreviousRecords, TargetHistory } from "../../history/index.js";
import type { ResultRecord } from "../../output/index.js";

/**
 * What a claim brings from before this worker held the target: the task id an earlier holder stored, and
 * (change tracking) the target's newest ok record in the job's earlier fleet runs. Kept while it is held.
 */
export class ClaimCarryOver {
	/** What claims ask for beside the target: its previous ok record when changes are tracked. */
	readonly claimOptions: ClaimOptions;
	/** Task ids an earlier holder stored: polled, not paid for again (the runner reads this map). */
	readonly tasks = new Map<string, string>();
	/** Change tracking: each held target's newest ok record in the job's earlier fleet runs (from its claim). */
	readonly #previous = new Map<string, TargetHistory>();
	readonly #previousData = new WeakMap<TargetHistory, unknown>();
	/** Change tracking's previous records: the fleet's, as each target's claim brought them. */
	readonly previousRecords: PreviousRecords = {
		previous: (id: string) => this.#previous.get(id) ?? null,
		readOkRecord: (entry: TargetHistory) => {
			const data = this.#previousData.get(entry);
			return data === undefined ? null : ({ data } as ResultRecord);
		},
	};

	/** `previousOf`: the job whose earlier fleet runs changes are tracked against; null when not tracked. */
	constructor(previousOf: string | null) {
		this.claimOptions = previousOf === null ? {} : { previousOf };
	}

	/** A claimed target: what its lease brought is kept until it settles. */
	note(lease: FleetLease): void {
		if (lease.taskId !== null) this.tasks.set(lease.targetId, lease.taskId);
		if (!lease.previousOk) return;
		const entry: TargetHistory = {
			latest: "ok",
			okAt: Date.parse(lease.previousOk.finishedAt),
			okHash: lease.previousOk.contentHash,
			okRun: null,
			okOffset: -1,
		};
		this.#previous.set(lease.targetId, entry);
		this.#previousData.set(entry, lease.previousOk.data);
	}

	/** The target settled: nothing of its claim is needed any more. */
	forget(targetId: string): void {
		this.tasks.delete(targetId);
		this.#previous.delete(targetId);
	}
}
