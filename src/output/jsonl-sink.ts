import { openAppendFile } from "./append-file.js";
import type { RecordSink } from "./record-sink.js";

/** `results.jsonl`: one JSON object per line, appended as each target finishes. */
export function createJsonlSink(path: string): RecordSink & { readonly size: number } {
	const file = openAppendFile(path);
	return {
		/** Where the next record lands (the history keeps each ok record's place). */
		get size() {
			return file.size;
		},
		write(record) {
			file.appendLine(JSON.stringify(record));
		},
		sync: () => file.sync(),
		retractLast: () => file.retractLast(),
		close: async () => file.close(),
	};
}
