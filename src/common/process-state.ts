import { readFileSync } from "node:fs";

/**
 * What this host's kernel says about a process id: gone, a zombie (exited, not yet reaped by its
 * parent — dead for every purpose, though `kill(pid, 0)` still succeeds), or running, with its start
 * time so a pid reused by another process can be told apart from the one that wrote a lock.
 */
export type ProcessState =
	| { readonly state: "gone" }
	| { readonly state: "zombie" }
	| { readonly state: "running"; readonly startTicks: string | null };

/** Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot. */
export function processState(pid: number): ProcessState {
	if (!Number.isInteger(pid) || pid <= 0) return { state: "gone" };
	try {
		process.kill(pid, 0);
	} catch (error) {
		// EPERM: it exists but belongs to someone else — running.
		if ((error as NodeJS.ErrnoException).code !== "EPERM") return { state: "gone" };
	}
	const stat = readStat(pid);
	if (stat === null) return { state: "running", startTicks: null };
	// The command name (field 2) is in parentheses and may hold spaces or parentheses: fields follow the last ")".
	const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
	if (fields[0] === "Z" || fields[0] === "X") return { state: "zombie" };
	return { state: "running", startTicks: fields[19] ?? null };
}

/** Start time of this process (for the lock it writes); null where /proc is not available. */
export function ownStartTicks(): string | null {
	const state = processState(process.pid);
	return state.state === "running" ? state.startTicks : null;
}

function readStat(pid: number): string | null {
	try {
		return readFileSync(`/proc/${pid}/stat`, "utf8");
	} catch {
		return null;
	}
}
