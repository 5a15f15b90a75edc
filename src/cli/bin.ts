#!/usr/bin/env node
import { main } from "./main.js";

const controller = new AbortController();
let signals = 0;
const onSignal = (signal: NodeJS.Signals) => {
	signals += 1;
	if (signals === 1) {
		controller.abort(new Error(`received ${signal}`));
		return;
	}
	// A second signal means "now": files are written record by record, so what is on disk stays valid.
	// A new line first, so neither this message nor the shell's prompt lands on a progress bar's line;
	// the run writes its summary on the way out (an "exit" listener: synchronous, a few ms).
	process.stderr.write(
		`\nscrapejob: stopped at once (${signal} again); records written so far are kept — finish with --resume\n`,
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
});
process.exitCode = code;
// Keep-alive sockets and timers must not hold a finished CLI open.
setTimeout(() => process.exit(code), 200).unref();
