#!/usr/bin/env node
import nodeModule from "node:module";

// Start-up is mostly compiling this CLI's modules: Node keeps their compiled code between runs (in
// NODE_COMPILE_CACHE, else a folder of the system's temporary directory). A failure to keep it costs nothing;
// an older Node without it gets to the version check below (a named import would fail before it).
(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();
const { NODE_TOO_OLD } = await import("../common/index.js");

// Before anything else is loaded: on an older Node the job store's native addon crashes the process.
if (NODE_TOO_OLD !== null) {
	process.stderr.write(`${NODE_TOO_OLD}\n`);
	process.exit(2);
}
const { createLastWords } = await import("../common/index.js");
const { main } = await import("./main.js");

const controller = new AbortController();
const lastWords = createLastWords();
let signals = 0;
const onSignal = (signal: NodeJS.Signals) => {
	signals += 1;
	if (signals === 1) {
		controller.abort(new Error(`received ${signal}`));
		return;
	}
	// A second signal means "now". Records are already on disk line by line; what is left is
	// synchronous and quick: the summary as it stands, the progress bar ended on its own line (so
	// neither this line nor the shell's prompt lands on it), one line saying so (stderr writes to a
	// terminal, file or pipe are synchronous on Linux).
	const phrases = lastWords.say();
	process.stderr.write(
		`scrapejob: stopped at once (${signal} again); records written so far are kept${phrases.map((phrase) => `; ${phrase}`).join("")}\n`,
	);
	process.exit(130);
};
process.on("SIGINT", onSignal);
// `scrapejob … | head` closes the pipe early: that is the reader's choice, not an error.
for (const stream of [process.stdout, process.stderr]) {
	stream.on("error", (error: NodeJS.ErrnoException) => {
		if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
		throw error;
	});
}
process.on("SIGTERM", onSignal);

const code = await main(process.argv.slice(2), {
	stdout: process.stdout,
	stderr: process.stderr,
	env: process.env,
	cwd: process.cwd(),
	exitCode: 0,
	signal: controller.signal,
	lastWords,
});
process.exitCode = code;
// Keep-alive sockets and timers must not hold a finished CLI open.
setTimeout(() => process.exit(code), 200).unref();
