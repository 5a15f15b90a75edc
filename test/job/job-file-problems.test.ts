// biome-ignore-all lint/suspicious/noTemplateCurlyInString: job files spell variables as ${NAME}; these strings are job files
import { describe, expect, it } from "vitest";
import { loadYaml } from "./helpers.js";

/**
 * Each case: a job file, and exactly the problems it must produce, in order, as
 * `file:line:col message`. Positions are 1-based; the whole list is compared, so a case also
 * proves no extra (duplicate or cascading) problem is reported.
 */
interface Case {
	name: string;
	yaml: string;
	errors: string[];
	env?: NodeJS.ProcessEnv;
	files?: Record<string, string>;
}

const OK = "https://shop.example/a";

const schemaCases: Case[] = [
	{
		name: "a breaker mapping with a wrong value names the value, not the false it could also have been",
		yaml: `name: t\ntargets: [${OK}]\nbreaker: {window: 1.5, by: registrable, cool_down: 5}\n`,
		errors: [
			"job.yaml:3:19 breaker.window: expected an integer, got 1.5",
			'job.yaml:3:28 breaker.by: must be one of "domain", "host" (got "registrable")',
			"job.yaml:3:52 breaker.cool_down: must be a duration such as 500ms, 3s, 10m, 24h or 7d (0 for none)",
		],
	},
	{
		name: "a breaker that is neither false nor a mapping",
		yaml: `name: t\ntargets: [${OK}]\nbreaker: "off"\n`,
		errors: ['job.yaml:3:10 breaker: must be false (got "off")'],
	},
	{
		name: "unknown top-level key with a near miss",
		yaml: `name: t\nconcurency: 4\ntargets: [${OK}]\n`,
		errors: ['job.yaml:2:1 concurency: unknown key; did you mean "concurrency"?'],
	},
	{
		name: "unknown key with a swapped pair, case-insensitive",
		yaml: `Name: t\ntragets: [${OK}]\n`,
		errors: [
			'job.yaml:1:1 Name: unknown key; did you mean "name"?',
			"job.yaml:1:1 the job has no targets: add `targets` (URLs) or `sources` (files of URLs)",
			'job.yaml:2:1 tragets: unknown key; did you mean "targets"?',
		],
	},
	{
		name: "unknown key far from any: the allowed keys are listed for small objects",
		yaml: `name: t\ntargets: [${OK}]\noutput:\n  colour: red\n`,
		errors: ["job.yaml:4:3 output.colour: unknown key; allowed: formats, content, csv_bom, csv_max_cell"],
	},
	{
		name: "a scrape option at the top level",
		yaml: `name: t\nmode: browser\ntargets: [${OK}]\n`,
		errors: ["job.yaml:2:1 mode: unknown key; scrape options go under `defaults` or on a target"],
	},
	{
		name: "unknown keys in defaults, a target, a source, retry",
		yaml: [
			"name: t",
			"defaults:",
			"  proxy_contry: DE",
			"targets:",
			`  - url: ${OK}`,
			"    scrrenshot: true",
			"sources:",
			"  - file: u.txt",
			"    colum: url",
			"retry:",
			"  atempts: 3",
		].join("\n"),
		errors: [
			'job.yaml:3:3 defaults.proxy_contry: unknown key; did you mean "proxy_country"?',
			'job.yaml:6:5 targets[0].scrrenshot: unknown key; did you mean "screenshot"?',
			'job.yaml:9:5 sources[0].colum: unknown key; did you mean "column"?',
			'job.yaml:11:3 retry.atempts: unknown key; did you mean "attempts"?',
		],
	},
	{
		name: "typos inside extract field rules (a map of fields): did you mean, as everywhere else",
		yaml: [
			"name: t",
			`targets: [${OK}]`,
			"extract:",
			"  price: {css: .price, tpye: number}",
			"  sku: {regx: 'SKU (\\d+)'}",
		].join("\n"),
		errors: [
			'job.yaml:4:24 extract.price.tpye: unknown key; did you mean "type"?',
			"job.yaml:5:8 extract.sku: needs one of css, regex, jsonld, meta",
			'job.yaml:5:9 extract.sku.regx: unknown key; did you mean "regex"?',
		],
	},
	{
		name: "unknown key far from any in a large object: where the allowed keys are (loadJob's words; the CLI's in schema-hint.test.ts)",
		yaml: `name: t\ntargets: [${OK}]\ndefaults:\n  zqxwv: 1\n`,
		errors: [
			"job.yaml:4:3 defaults.zqxwv: unknown key (the allowed keys are in node_modules/scrapejob/jobs/job.schema.json)",
		],
	},
	{
		name: "concurrency: zero",
		yaml: `name: t\nconcurrency: 0\ntargets: [${OK}]\n`,
		errors: ["job.yaml:2:14 concurrency: must be greater than 0 (got 0)"],
	},
	{
		name: "concurrency: a word",
		yaml: `name: t\nconcurrency: lots\ntargets: [${OK}]\n`,
		errors: ['job.yaml:2:14 concurrency: must be "auto" or a positive integer (got "lots")'],
	},
	{
		name: "concurrency: a fraction",
		yaml: `name: t\nconcurrency: 2.5\ntargets: [${OK}]\n`,
		errors: ['job.yaml:2:14 concurrency: must be "auto" or a positive integer (got 2.5)'],
	},
	{
		name: "numbers: negative, zero, wrong type",
		yaml: [
			"name: t",
			"max_credits: -10",
			"task_timeout_ms: 0",
			`targets: [${OK}]`,
			"retry:",
			"  attempts: 0",
			"  backoff_ms: ten",
			"  max_backoff_ms: -1",
		].join("\n"),
		errors: [
			"job.yaml:2:14 max_credits: must be at least 0 (got -10)",
			"job.yaml:3:18 task_timeout_ms: must be greater than 0 (got 0)",
			"job.yaml:6:13 retry.attempts: must be at least 1 (got 0)",
			'job.yaml:7:15 retry.backoff_ms: expected a number, got "ten"',
			"job.yaml:8:19 retry.max_backoff_ms: must be greater than 0 (got -1)",
		],
	},
	{
		name: "enums with suggestions",
		yaml: `name: t\non_bad_row: skipp\ntargets: [${OK}]\noutput:\n  formats: [json]\n  content: html\n`,
		errors: [
			'job.yaml:2:13 on_bad_row: must be one of "fail", "skip" (got "skipp"); did you mean "skip"?',
			'job.yaml:5:13 output.formats[0]: must be one of "jsonl", "csv" (got "json"); did you mean "jsonl"?',
			'job.yaml:6:12 output.content: must be one of "inline", "files", "none" (got "html")',
		],
	},
	{
		name: "empty output formats",
		yaml: `name: t\ntargets: [${OK}]\noutput:\n  formats: []\n`,
		errors: ["job.yaml:4:12 output.formats: must not be empty"],
	},
	{
		name: "wrong shapes: targets not a list, defaults a list, retry a number",
		yaml: `name: t\ntargets: ${OK}\ndefaults: [a]\nretry: 3\n`,
		errors: [
			`job.yaml:2:10 targets: expected a list, got "${OK}"`,
			"job.yaml:3:11 defaults: expected a mapping (key: value), got a list",
			"job.yaml:4:8 retry: expected a mapping (key: value), got 3",
		],
	},
	{
		name: "a key with no value points at the key",
		yaml: `name: t\ndefaults:\ntargets: [${OK}]\n`,
		errors: ["job.yaml:2:1 defaults: expected a mapping (key: value), got nothing"],
	},
	{
		name: "target items of the wrong type",
		yaml: `name: t\ntargets:\n  - 42\n  - null\n  - [${OK}]\n`,
		errors: [
			"job.yaml:3:5 targets[0]: expected a string or a mapping (key: value), got 42",
			"job.yaml:4:5 targets[1]: expected a string or a mapping (key: value), got nothing",
			"job.yaml:5:5 targets[2]: expected a string or a mapping (key: value), got a list",
		],
	},
	{
		name: "scrape option types",
		yaml: [
			"name: t",
			"targets:",
			`  - url: ${OK}`,
			'    wait_seconds: "3"',
			"    screenshot: yes",
			"    excluded_tags: 5",
			"    additional_headers: { Accept: 1 }",
			"    proxy_type: mobile",
		].join("\n"),
		errors: [
			'job.yaml:4:19 targets[0].wait_seconds: expected a number, got "3"',
			'job.yaml:5:17 targets[0].screenshot: expected true or false, got "yes"',
			"job.yaml:6:20 targets[0].excluded_tags: expected a string or a list, got 5",
			"job.yaml:7:35 targets[0].additional_headers.Accept: expected a string, got 1",
			'job.yaml:8:17 targets[0].proxy_type: must be one of "residential", "datacenter" (got "mobile")',
		],
	},
	{
		name: "names that would escape the output folder",
		yaml: `name: ../x\ntargets: [${OK}]\n`,
		errors: [
			'job.yaml:1:7 name: must be a safe folder name: 1–100 letters, digits, ".", "_" or "-", not starting with ".", not a Windows device name (CON, NUL, LPT1, …) (got "../x")',
		],
	},
	{
		name: "absolute name",
		yaml: `name: /etc\ntargets: [${OK}]\n`,
		errors: [
			'job.yaml:1:7 name: must be a safe folder name: 1–100 letters, digits, ".", "_" or "-", not starting with ".", not a Windows device name (CON, NUL, LPT1, …) (got "/etc")',
		],
	},
	{
		name: "name with a slash",
		yaml: `name: a/b\ntargets: [${OK}]\n`,
		errors: [
			'job.yaml:1:7 name: must be a safe folder name: 1–100 letters, digits, ".", "_" or "-", not starting with ".", not a Windows device name (CON, NUL, LPT1, …) (got "a/b")',
		],
	},
	{
		name: "empty name",
		yaml: `name: ""\ntargets: [${OK}]\n`,
		errors: [
			'job.yaml:1:7 name: must be a safe folder name: 1–100 letters, digits, ".", "_" or "-", not starting with ".", not a Windows device name (CON, NUL, LPT1, …) (got "")',
		],
	},
	{
		name: "ids that are not safe file names",
		yaml: `name: t\ntargets:\n  - url: ${OK}\n    id: a/b\n  - url: ${OK}/2\n    id: ".."\n  - url: ${OK}/3\n    id: ""\n`,
		errors: [
			'job.yaml:4:9 targets[0].id: must be 1–128 letters, digits, ".", "_" or "-" (not "." or "..", not a Windows device name such as CON or NUL, not 16 hex digits, which are kept for derived ids): it names files under pages/ (got "a/b")',
			'job.yaml:6:9 targets[1].id: must be 1–128 letters, digits, ".", "_" or "-" (not "." or "..", not a Windows device name such as CON or NUL, not 16 hex digits, which are kept for derived ids): it names files under pages/ (got "..")',
			'job.yaml:8:9 targets[2].id: must be 1–128 letters, digits, ".", "_" or "-" (not "." or "..", not a Windows device name such as CON or NUL, not 16 hex digits, which are kept for derived ids): it names files under pages/ (got "")',
		],
	},
	{
		name: "duplicate ids, ignoring case",
		yaml: `name: t\ntargets:\n  - url: ${OK}\n    id: home\n  - url: ${OK}/2\n    id: Home\n`,
		errors: [
			'job.yaml:6:9 targets[1].id: duplicate id "Home": targets[0] has it already (ids are unique, ignoring case, since they name files)',
		],
	},
	{
		name: "no targets at all",
		yaml: "name: t\n",
		errors: ["job.yaml:1:1 the job has no targets: add `targets` (URLs) or `sources` (files of URLs)"],
	},
	{
		name: "empty targets and sources",
		yaml: "name: t\ntargets: []\nsources: []\n",
		errors: ["job.yaml:2:10 targets: the job has no targets: `targets` and `sources` are empty"],
	},
	{
		name: "max backoff below the first backoff",
		yaml: `name: t\ntargets: [${OK}]\nretry:\n  backoff_ms: 5000\n  max_backoff_ms: 100\n`,
		errors: ["job.yaml:5:19 retry.max_backoff_ms: max_backoff_ms (100) must not be less than backoff_ms (5000)"],
	},
	{
		name: "CSV source without a column, text source with one",
		yaml: `name: t\nsources:\n  - file: a.csv\n  - file: b.txt\n    format: text\n    column: url\n`,
		errors: [
			"job.yaml:3:5 sources[0].column: a CSV source needs `column`: the header of the column that holds the URLs",
			"job.yaml:6:13 sources[1].column: `column` applies to CSV sources only; set `format: csv`",
			'job.yaml:3:11 cannot read source "a.csv" (<dir>/a.csv): no such file',
			'job.yaml:4:11 cannot read source "b.txt" (<dir>/b.txt): no such file',
		],
	},
	{
		name: "source entries of the wrong shape",
		yaml: `name: t\nsources:\n  - {column: x}\n  - file: ""\n  - 7\n`,
		errors: [
			"job.yaml:3:5 sources[0].file: is required",
			"job.yaml:4:11 sources[1].file: must not be empty",
			"job.yaml:5:5 sources[2]: expected a string or a mapping (key: value), got 7",
		],
	},
];

const ruleCases: Case[] = [
	{
		name: "url missing in a target object (the service's text)",
		yaml: "name: t\ntargets:\n  - mode: request\n",
		errors: ["job.yaml:3:5 targets[0].url: url is required"],
	},
	{
		name: "url without a scheme",
		yaml: "name: t\ntargets:\n  - shop.example/a\n",
		errors: [
			'job.yaml:3:5 targets[0]: invalid URL format (it needs the http:// or https:// prefix; got "shop.example/a")',
		],
	},
	{
		name: "host:port without a scheme",
		yaml: "name: t\ntargets:\n  - url: localhost:8080/a\n",
		errors: [
			'job.yaml:3:10 targets[0].url: invalid URL format (it needs the http:// or https:// prefix; got "localhost:8080/a")',
		],
	},
	{
		name: "non-http schemes",
		yaml: "name: t\ntargets:\n  - file:///etc/passwd\n  - javascript:alert(1)\n  - ftp://x.example/f\n",
		errors: [
			'job.yaml:3:5 targets[0]: invalid URL format (only http:// and https:// URLs can be scraped, not file:; got "file:///etc/passwd")',
			'job.yaml:4:5 targets[1]: invalid URL format (only http:// and https:// URLs can be scraped, not javascript:; got "javascript:alert(1)")',
			'job.yaml:5:5 targets[2]: invalid URL format (only http:// and https:// URLs can be scraped, not ftp:; got "ftp://x.example/f")',
		],
	},
	{
		name: "URLs with spaces",
		yaml: 'name: t\ntargets:\n  - https://shop.example/a b\n  - url: "https://sh op.example/"\n  - " https://shop.example/c"\n',
		errors: [
			'job.yaml:3:5 targets[0]: invalid URL format (it contains whitespace; encode a space as %20; got "https://shop.example/a b")',
			'job.yaml:4:10 targets[1].url: invalid URL format (it contains whitespace; encode a space as %20; got "https://sh op.example/")',
			'job.yaml:5:5 targets[2]: invalid URL format (it has leading or trailing whitespace; got " https://shop.example/c")',
		],
	},
	{
		name: "mode, country, session id: the service's texts (mode's followed by the allowed values)",
		yaml: `name: t\ntargets:\n  - url: ${OK}\n    mode: fast\n    proxy_country: USA\n    proxy_session_id: abc\n`,
		errors: [
			'job.yaml:4:11 targets[0].mode: invalid mode value (allowed: request, browser, auto, adaptive; got "fast")',
			'job.yaml:5:20 targets[0].proxy_country: invalid proxy_country (a two-letter ISO 3166-1 code such as US, GB or DE; got "USA"; did you mean "US"?)',
			"job.yaml:6:23 targets[0].proxy_session_id: invalid proxy_session_id",
		],
	},
	{
		name: "session id with a symbol, too long",
		yaml: `name: t\ntargets:\n  - url: ${OK}\n    proxy_session_id: abc-def\n  - url: ${OK}/2\n    proxy_session_id: abcdefghi\n`,
		errors: [
			"job.yaml:4:23 targets[0].proxy_session_id: invalid proxy_session_id",
			"job.yaml:6:23 targets[1].proxy_session_id: invalid proxy_session_id",
		],
	},
	{
		name: "screenshot without browser",
		yaml: `name: t\ntargets:\n  - url: ${OK}\n    screenshot: true\n`,
		errors: ["job.yaml:4:17 targets[0].screenshot: screenshot requires browser (set mode to browser)"],
	},
	{
		name: "ai_enhance without ai_source",
		yaml: `name: t\ntargets:\n  - url: ${OK}\n    ai_enhance: true\n`,
		errors: ["job.yaml:4:5 targets[0].ai_source: ai_source required"],
	},
	{
		name: "datacenter proxies outside request mode",
		yaml: `name: t\ndefaults:\n  proxy_type: datacenter\ntargets:\n  - url: ${OK}\n    mode: browser\n`,
		errors: [
			"job.yaml:3:15 defaults.proxy_type: Value error, Datacenter proxies can only be used with mode='request'. Browser and auto modes require premium (residential) proxies.",
			"job.yaml:6:5 targets[0].proxy_type: Value error, Datacenter proxies can only be used with mode='request'. Browser and auto modes require premium (residential) proxies. (proxy_type is set in defaults)",
		],
	},
	{
		name: "rules apply to merged options: defaults' screenshot against a target's mode",
		yaml: `name: t\ndefaults:\n  mode: browser\n  screenshot: true\ntargets:\n  - ${OK}\n  - url: ${OK}/2\n    mode: request\n`,
		errors: [
			"job.yaml:8:5 targets[1].screenshot: screenshot requires browser (set mode to browser) (screenshot is set in defaults)",
		],
	},
	{
		name: "a problem wholly in defaults is reported once, not per target",
		yaml: `name: t\ndefaults:\n  proxy_country: USA\n  screenshot: true\ntargets:\n  - ${OK}\n  - ${OK}/2\n`,
		errors: [
			'job.yaml:3:18 defaults.proxy_country: invalid proxy_country (a two-letter ISO 3166-1 code such as US, GB or DE; got "USA"; did you mean "US"?)',
			"job.yaml:4:15 defaults.screenshot: screenshot requires browser (set mode to browser)",
		],
	},
	{
		name: "a target fixing what defaults got wrong is fine",
		yaml: `name: t\ndefaults:\n  screenshot: true\ntargets:\n  - url: ${OK}\n    mode: browser\n`,
		errors: ["job.yaml:3:15 defaults.screenshot: screenshot requires browser (set mode to browser)"],
	},
	{
		name: "source options are checked merged with defaults",
		yaml: "name: t\ndefaults:\n  mode: request\nsources:\n  - file: u.txt\n    screenshot: true\n",
		files: { "u.txt": `${OK}\n` },
		errors: ["job.yaml:6:17 sources[0].screenshot: screenshot requires browser (set mode to browser)"],
	},
	{
		name: "an unset variable is named at its position, and its value is not checked further",
		yaml: "name: t\ntargets:\n  - ${SITE}/a\n  - url: 'x ${HOST}'\n",
		errors: [
			"job.yaml:3:5 targets[0]: environment variable SITE is not set",
			"job.yaml:4:13 targets[1].url: environment variable HOST is not set",
		],
	},
	{
		name: "a malformed variable reference",
		yaml: "name: t\ntargets:\n  - https://${site-host}/a\n",
		errors: [
			'job.yaml:3:13 targets[0]: invalid variable reference "${site-host}": write ${NAME} with letters, digits and _ (or $${ for a literal ${)',
		],
	},
];

async function problemsOf(c: Case): Promise<string[]> {
	const outcome = await loadYaml(c.yaml, { env: c.env ?? {}, files: c.files ?? {} });
	return outcome.errors;
}

describe("job file schema problems", () => {
	it.each(schemaCases)("$name", async (c) => {
		// Absolute temp paths in "cannot read source" messages vary; compare them as <dir>/name.
		const errors = (await problemsOf(c)).map((line) => line.replace(/\(\/[^)]*\/([^/)]+)\)/, "(<dir>/$1)"));
		expect(errors).toEqual(c.errors);
	});
});

describe("the service's parameter rules and cross-field rules", () => {
	it.each(ruleCases)("$name", async (c) => {
		expect(await problemsOf(c)).toEqual(c.errors);
	});
});

describe("valid jobs", () => {
	it("the same rules pass good values, and ${VAR} expands", async () => {
		const outcome = await loadYaml(
			[
				"targets:",
				"  - url: ${SITE}/a",
				"    mode: browser",
				"    screenshot: true",
				"    proxy_country: de",
				"    proxy_session_id: abc123",
				"  - url: ${SITE}/b",
				"    mode: request",
				"    proxy_type: datacenter",
				"    ai_enhance: true",
				"    ai_source: markdown",
				"  - 'https://shop.example/$${literal}'",
			].join("\n"),
			{ env: { SITE: "https://shop.example" } },
		);
		expect(outcome.errors).toEqual([]);
		expect(outcome.loaded?.job.targets.map((t) => t.url)).toEqual([
			"https://shop.example/a",
			"https://shop.example/b",
			"https://shop.example/${literal}",
		]);
	});

	it("an empty variable is set (expands to nothing)", async () => {
		const outcome = await loadYaml("targets: ['https://shop.example/${EMPTY}a']\n", { env: { EMPTY: "" } });
		expect(outcome.loaded?.job.targets[0]?.url).toBe("https://shop.example/a");
	});

	it("reports every problem of a file at once", async () => {
		const outcome = await loadYaml(
			`concurency: 2\nname: ../x\ndefaults:\n  mode: fast\ntargets:\n  - shop.example\n  - url: ${OK}\n    screenshot: true\n`,
		);
		expect(outcome.errors).toHaveLength(5);
		expect(outcome.errors.map((line) => line.split(" ")[0])).toEqual([
			"job.yaml:1:1",
			"job.yaml:2:7",
			"job.yaml:4:9",
			"job.yaml:6:5",
			"job.yaml:8:17",
		]);
	});
});

describe("a section's key written at the top level", () => {
	it("names the section it goes under (crawl, extract_checks, retry, output)", async () => {
		const outcome = await loadYaml(
			"name: t\nmax_pages: 5\nmin_fill: 0.9\nattempts: 3\nformats: [csv]\ntargets:\n  - https://shop.example/a\n",
		);
		expect(outcome.errors).toEqual([
			"job.yaml:2:1 max_pages: unknown key; it goes under `crawl:` (crawl: {max_pages: …})",
			"job.yaml:3:1 min_fill: unknown key; it goes under `extract_checks:` (extract_checks: {min_fill: …})",
			"job.yaml:4:1 attempts: unknown key; it goes under `retry:` (retry: {attempts: …})",
			"job.yaml:5:1 formats: unknown key; it goes under `output:` (output: {formats: …})",
		]);
	});
});

describe("unset variables", () => {
	it("one variable used on many targets is reported once, at its first use, with a count", async () => {
		const outcome = await loadYaml(`name: t\ntargets:\n  - \${SITE}/a\n  - url: \${SITE}/b\n  - \${OTHER}/c\n`);
		expect(outcome.errors).toEqual([
			"job.yaml:3:5 targets[0]: environment variable SITE is not set (used 2 times; this is the first)",
			"job.yaml:5:5 targets[2]: environment variable OTHER is not set",
		]);
	});

	it("the demo site's variable, which only run --sandbox sets, says what sets it and the address to give it", async () => {
		const outcome = await loadYaml(`name: t\ntargets:\n  - \${SCRAPEJOB_DEMO_SITE}/a\n  - \${SCRAPEJOB_DEMO_SITE}/b\n`);
		expect(outcome.errors).toEqual([
			"job.yaml:3:5 targets[0]: environment variable SCRAPEJOB_DEMO_SITE is not set (used 2 times; this is the first): `run --sandbox` sets it to its demo site; elsewhere set it to the demo site's address, e.g. SCRAPEJOB_DEMO_SITE=http://127.0.0.1:8701 (`scrapejob emulator --demo-site`)",
		]);
		const valid = await loadYaml(`name: t\ntargets:\n  - \${SCRAPEJOB_DEMO_SITE}/a\n`, {
			env: { SCRAPEJOB_DEMO_SITE: "http://127.0.0.1:8701" },
		});
		expect(valid.errors).toEqual([]);
	});
});
