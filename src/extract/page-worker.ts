/**
 * The worker thread's entry (piscina): one page's parse, fields and links per call. Kept apart from
 * the main thread so a page that takes minutes or gigabytes ends its own worker, never the run.
 */
import { type PageTask, type PageTaskResult, runPageTask } from "./page-task.js";

export default function pageWorker(task: PageTask): PageTaskResult {
	return runPageTask(task);
}
