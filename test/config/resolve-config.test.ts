import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readConfigFile, resolveConfig } from "../../src/config/index.js";
import { tempDir } from "../helpers/job-files.js";

describe("configuration", () => {
	it("takes flags over environment over the --config file, and says where each came from", async () => {
		const dir = tempDir();
		writeFileSync(
			join(dir, "scrapejob.env"),
			[
				"# keys for the nightly job",
				"export SCRAPEJOB_ACCOUNT_KEY='file-account-key'",
				'SCRAPEJOB_SCRAPER_KEY="file-scraper-key"',
				"SCRAPEJOB_API_URL=https://file.example",
				"",
			].join("\r\n"),
		);
		const config = await resolveConfig({
			flags: { config: "scrapejob.env", apiUrl: "https://flag.example" },
			env: { SCRAPEJOB_SCRAPER_KEY: "env-scraper-key", SCRAPEJOB_SCRAPER_URL: "" },
			cwd: dir,
		});
		expect(config).toMatchObject({
			accountKey: "file-account-key",
			scraperKey: "env-scraper-key",
			apiUrl: "https://flag.example",
			scraperUrl: undefined,
			sources: { SCRAPEJOB_ACCOUNT_KEY: "config", SCRAPEJOB_SCRAPER_KEY: "env", SCRAPEJOB_API_URL: "flag" },
		});
	});

	it("reads a file as `set -a && . ./file` does: comments after a space, quotes, a # inside a value", async () => {
		const dir = tempDir();
		const lines = [
			"SCRAPEJOB_ACCOUNT_KEY=acc-key-1 # the nightly job's",
			'SCRAPEJOB_SCRAPER_KEY="scr key 2" # quoted, with a space',
			"SCRAPEJOB_API_URL=https://api.example/#not-a-comment",
			"export SCRAPEJOB_FLEET_URL='postgres://u:p#w@db.example/x'",
			"SCRAPEJOB_FLEET_SCHEMA=sched\t# a tab before it",
		];
		const file = join(dir, "scrapejob.env");
		writeFileSync(file, `${lines.join("\n")}\n`);
		const names = ["SCRAPEJOB_ACCOUNT_KEY", "SCRAPEJOB_SCRAPER_KEY", "SCRAPEJOB_API_URL", "SCRAPEJOB_FLEET_URL"];
		const script = `set -a && . ./scrapejob.env && printf '%s\\n' ${[...names, "SCRAPEJOB_FLEET_SCHEMA"].map((name) => `"$${name}"`).join(" ")}`;
		const bySh = execFileSync("/bin/sh", ["-c", script], { cwd: dir, env: {}, encoding: "utf8" }).split("\n");
		const read = await readConfigFile(file);
		expect([...names, "SCRAPEJOB_FLEET_SCHEMA"].map((name) => read[name as keyof typeof read])).toEqual(
			bySh.slice(0, 5),
		);
		expect(read.SCRAPEJOB_ACCOUNT_KEY).toBe("acc-key-1");
	});

	it("refuses plain http off loopback, credentials in addresses, and unknown or malformed config lines", async () => {
		const dir = tempDir();
		await expect(resolveConfig({ flags: { apiUrl: "http://api.example.com" }, env: {}, cwd: dir })).rejects.toThrow(
			/HTTPS-only/,
		);
		// A misspelt flag would leave the scraper address to the public default, where the key would go.
		const misspelt = { scraperURL: "http://127.0.0.1:9/api/v1" } as Record<string, string>;
		await expect(resolveConfig({ flags: misspelt, env: {}, cwd: dir })).rejects.toThrow(
			/^resolveConfig's flags: unknown option "scraperURL"; did you mean "scraperUrl"\?$/,
		);
		await expect(
			resolveConfig({ flags: {}, env: { SCRAPEJOB_SCRAPER_URL: "http://127.0.0.1:9/api/v1" }, cwd: dir }),
		).resolves.toMatchObject({ scraperUrl: "http://127.0.0.1:9/api/v1" });
		await expect(
			resolveConfig({ flags: {}, env: { SCRAPEJOB_API_URL: "https://api.example?apikey=secret123" }, cwd: dir }),
		).rejects.toThrow(/must not carry credentials or a query string/);

		writeFileSync(join(dir, "typo.env"), "SCRAPEJOB_ACOUNT_KEY=x\n");
		await expect(readConfigFile(join(dir, "typo.env"))).rejects.toThrow(
			/typo\.env:1:1 unknown setting SCRAPEJOB_ACOUNT_KEY; did you mean SCRAPEJOB_ACCOUNT_KEY\?/,
		);
		writeFileSync(join(dir, "bad.env"), "# ok\njust words\n");
		await expect(readConfigFile(join(dir, "bad.env"))).rejects.toThrow(/bad\.env:2:1 expected KEY=VALUE/);
		await expect(readConfigFile(join(dir, "missing.env"))).rejects.toThrow(/no such file/);
	});
});
