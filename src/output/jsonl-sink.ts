import { openAppendFile } from "./append-file.js";
import type { RecordSink } from "./record-sink.js";

/** `results.jsonl`: one JSON object per line, appended as each target finishes. */
export function createJsonlSink(path: string): RecordSink {
	const file = openAppendFile(path);
	return {
		write(record) {
			file.append(`${JSON.stringify(record)}\n`);
		},
		sync: () => file.sync(),
		close: async () => file.close(),
	};
}
