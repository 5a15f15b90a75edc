import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openAppendFile } from "../../src/output/index.js";
import { tempDir } from "../helpers/job-files.js";

describe("appendLine", () => {
	it("writes each line whole with its newline: multi-byte text, lines past the shared buffer, and the size kept", () => {
		const path = join(tempDir(), "lines.jsonl");
		const file = openAppendFile(path);
		const lines = [
			JSON.stringify({ title: "Crème brûlée — 北京 🍮" }),
			// Past the 64 KiB stage however it is counted: 30,000 three-byte characters.
			"€".repeat(30_000),
			// Just under the stage in code units, but more bytes than it holds if each took 3.
			"é".repeat(21_845),
			"",
			"plain",
		];
		for (const line of lines) file.appendLine(line);
		file.append("raw\n");
		expect(file.size).toBe(statSync(path).size);
		file.close();
		expect(readFileSync(path, "utf8")).toBe(`${lines.join("\n")}\nraw\n`);
	});

	it("two files take turns with the one stage without mixing their lines", () => {
		const dir = tempDir();
		const a = openAppendFile(join(dir, "a"));
		const b = openAppendFile(join(dir, "b"));
		for (let i = 0; i < 100; i++) {
			a.appendLine(`a${i}`);
			b.appendLine(`b${"x".repeat(i)}`);
		}
		a.close();
		b.close();
		expect(readFileSync(join(dir, "a"), "utf8").split("\n")[99]).toBe("a99");
		expect(readFileSync(join(dir, "b"), "utf8").split("\n")[99]).toBe(`b${"x".repeat(99)}`);
	});
});

describe("retractLast", () => {
	it("takes back its own last line, even when another writer appended before it (a stale end)", () => {
		// A writer paused before its write (SIGSTOP) while another host took over and appended: the
		// paused writer's line lands after the other's, past the end it knew. Found at the end, it is cut.
		const path = join(tempDir(), "results.jsonl");
		const paused = openAppendFile(path);
		paused.appendLine('{"id":"a"}');
		const successor = openAppendFile(path);
		successor.appendLine('{"id":"b"}');
		successor.appendLine('{"id":"c"}');
		paused.appendLine('{"id":"b","late":true}');
		expect(paused.retractLast()).toBe(true);
		expect(readFileSync(path, "utf8")).toBe('{"id":"a"}\n{"id":"b"}\n{"id":"c"}\n');
		successor.appendLine('{"id":"d"}');
		expect(readFileSync(path, "utf8").endsWith('{"id":"c"}\n{"id":"d"}\n')).toBe(true);
		paused.close();
		successor.close();
	});

	it("never cuts a line another writer appended after its own, and tries once, right after its append", () => {
		const path = join(tempDir(), "results.jsonl");
		const first = openAppendFile(path);
		const second = openAppendFile(path);
		first.appendLine('{"id":"x"}');
		second.appendLine('{"id":"y"}');
		expect(first.retractLast()).toBe(false);
		// The other's line ends the file; ours is in the middle, left as it is.
		expect(readFileSync(path, "utf8")).toBe('{"id":"x"}\n{"id":"y"}\n');
		expect(second.retractLast()).toBe(true);
		// Ours ends the file now, but the moment has passed: nothing is taken back later.
		expect(first.retractLast()).toBe(false);
		expect(readFileSync(path, "utf8")).toBe('{"id":"x"}\n');
		first.close();
		second.close();
	});
});
