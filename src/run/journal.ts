import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { type AppendFile, openAppendFile } from "../output/index.js";

/**
 * `journal.jsonl`: what happened to targets between start and record, appended with synchronous
 * writes as it happens. Together with `results.jsonl` (the finished records) it is what `--resume`
 * reads: a target with a record is done; a target with a journalled task id is polled, not paid again.
 */
export type JournalEvent =
	| { e: "session"; run_id: string; at: string; resumed: boolean }
	| { e: "start"; id: string }
	| { e: "task"; id: string; task_id: string };

export interface Journal {
	session(runId: string, resumed: boolean): void;
	started(id: string): void;
	/** Written before the task is polled, so a crash while polling leaves the id for resume. */
	task(id: string, taskId: string): void;
	sync(): void;
	close(): void;
}

export function openJournal(path: string): Journal {
	const file: AppendFile = openAppendFile(path);
	// "start" lines only explain a crash afterwards; resume does not need them. They are gathered
	// and written with the next line that matters (a task id) or by the periodic sync, saving a
	// system call per target.
	let pendingStarts = "";
	const write = (event: JournalEvent) => {
		file.append(`${pendingStarts}${JSON.stringify(event)}\n`);
		pendingStarts = "";
	};
	const flush = () => {
		if (pendingStarts === "") return;
		file.append(pendingStarts);
		pendingStarts = "";
	};
	return {
		session: (runId, resumed) => write({ e: "session", run_id: runId, at: new Date().toISOString(), resumed }),
		started: (id) => {
			pendingStarts += `{"e":"start","id":${JSON.stringify(id)}}\n`;
			if (pendingStarts.length > 64 * 1024) flush();
		},
		task: (id, taskId) => write({ e: "task", id, task_id: taskId }),
		sync: () => {
			flush();
			file.sync();
		},
		close: () => {
			flush();
			file.close();
		},
	};
}

/**
 * Read the task ids journalled for targets, ignoring a torn last line. Returns only the latest
 * task id per target; the caller drops those that have a record.
 */
export async function readJournalTasks(path: string): Promise<{ tasks: Map<string, string>; started: number }> {
	const tasks = new Map<string, string>();
	let started = 0;
	const lines = createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY });
	try {
		for await (const line of lines) {
			if (!line.endsWith("}")) continue;
			let event: JournalEvent;
			try {
				event = JSON.parse(line) as JournalEvent;
			} catch {
				continue;
			}
			if (event.e === "task") tasks.set(event.id, event.task_id);
			else if (event.e === "start") started += 1;
		}
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
	}
	return { tasks, started };
}
