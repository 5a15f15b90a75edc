/**
 * Job-file regexes on RE2 (re2js) against V8's RegExp, CPU ms per page, on the demo site's product
 * pages of 30, 100 and 300 KB: what an `extract:` regex field (first match, and `all`), a data-contract
 * `pattern` over a value and a crawl `exclude` over URLs cost per page. Run:
 * `tsc -p tsconfig.bench.json && node node_modules/.cache/scrapejob-bench/bench/regex-bench.js`.
 */

import { compileUserRegex } from "../src/common/index.js";
import { startDemoSite } from "../src/emulator/index.js";

const SIZES_KB = [30, 100, 300] as const;

function cpuMs(): number {
	const usage = process.cpuUsage();
	return (usage.user + usage.system) / 1000;
}

/** CPU ms per call of `work` over `inputs`, after a warm-up round. */
function perCall(inputs: readonly string[], work: (input: string) => unknown, rounds: number): number {
	for (const input of inputs) work(input);
	const started = cpuMs();
	for (let round = 0; round < rounds; round += 1) for (const input of inputs) work(input);
	return (cpuMs() - started) / (rounds * inputs.length);
}

const CASES = [
	{ label: "regex, first match", source: '"sku":\\s*"([^"]+)"', all: false },
	{ label: "regex, title", source: "<title>(.*?)</title>", all: false },
	{ label: "regex all: hrefs", source: 'href="([^"]+)"', all: true },
	{ label: "regex, no match", source: "SKU: NOPE-(\\d+)", all: false },
] as const;

async function main(): Promise<void> {
	const site = await startDemoSite();
	try {
		for (const kb of SIZES_KB) {
			const pages: string[] = [];
			for (let n = 1; n <= 10; n += 1) pages.push(await (await fetch(`${site.url}/large/${n}?kb=${kb}`)).text());
			const rounds = Math.max(2, Math.round(600 / kb));
			for (const { label, source, all } of CASES) {
				const re2 = compileUserRegex(source);
				const native = new RegExp(source, all ? "g" : "");
				const re2Ms = all
					? perCall(pages, (page) => [...re2.matchAll(page)].length, rounds)
					: perCall(pages, (page) => re2.exec(page), rounds);
				const nativeMs = all
					? perCall(pages, (page) => [...page.matchAll(native)].length, rounds)
					: perCall(pages, (page) => native.exec(page), rounds);
				console.log(
					`${String(kb).padStart(3)} KB  ${label.padEnd(22)} re2js ${re2Ms.toFixed(3).padStart(8)} ms  V8 ${nativeMs.toFixed(3).padStart(7)} ms  ×${(re2Ms / nativeMs).toFixed(0)}`,
				);
			}
		}
		const values = Array.from({ length: 1000 }, (_, n) => `DEMO-${n}`);
		const pattern = compileUserRegex("^DEMO-\\d+$");
		const nativePattern = /^DEMO-\d+$/u;
		console.log(
			`pattern over a value: re2js ${(perCall(values, (v) => pattern.test(v), 200) * 1000).toFixed(2)} µs  V8 ${(perCall(values, (v) => nativePattern.test(v), 200) * 1000).toFixed(2)} µs`,
		);
		const urls = Array.from({ length: 1000 }, (_, n) => `https://shop.example/catalogue/page-${n}/item?ref=${n}`);
		const exclude = compileUserRegex("/calendar/|\\?sort=");
		const nativeExclude = /\/calendar\/|\?sort=/;
		console.log(
			`exclude over a URL: re2js ${(perCall(urls, (u) => exclude.test(u), 200) * 1000).toFixed(2)} µs  V8 ${(perCall(urls, (u) => nativeExclude.test(u), 200) * 1000).toFixed(2)} µs`,
		);
	} finally {
		await site.close();
	}
}

await main();
