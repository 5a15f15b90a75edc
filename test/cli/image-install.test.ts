import { execFile } from "node:child_process";
import {
	chmodSync,
	cpSync,
	existsSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	symlinkSync,
	writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/job-files.js";
import { assertBuilt } from "../helpers/spawn-cli.js";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "..", "..");
const DOCKERFILE = readFileSync(join(ROOT, "Dockerfile"), "utf8");
const LOCK = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
	packages: Record<string, { dev?: boolean }>;
};

/** The runtime stage's install command, as the Dockerfile has it; the test runs the same one. */
const INSTALL = "npm ci --omit=dev --ignore-scripts";

describe("Dockerfile", () => {
	beforeAll(() => assertBuilt());

	it("builds in one stage and runs from another: Node 24, production dependencies only, a non-root user, scrapejob as the entry point", () => {
		const stages = [...DOCKERFILE.matchAll(/^FROM (\S+)(?: AS (\S+))?$/gm)].map((match) => ({
			image: match[1]!,
			name: match[2],
		}));
		expect(stages.length).toBeGreaterThanOrEqual(2);
		expect(stages.every((stage) => stage.image.startsWith("node:24"))).toBe(true);
		expect(stages.at(-1)!.image).toMatch(/slim/);
		const runtime = DOCKERFILE.slice(DOCKERFILE.lastIndexOf("\nFROM "));
		expect(DOCKERFILE).toContain(INSTALL);
		expect(DOCKERFILE).toMatch(/RUN npm ci --ignore-scripts[^\n]*\n(?:.*\n)*RUN npm run build/);
		expect(runtime).toContain("COPY --from=build /src/dist dist");
		expect(runtime).toContain("COPY jobs jobs");
		expect(runtime).toMatch(/^USER (?!root)\S+$/m);
		expect(runtime).toContain('ENTRYPOINT ["scrapejob"]');
		expect(readFileSync(join(ROOT, ".dockerignore"), "utf8")).toMatch(/^node_modules$/m);
	});

	it("the runtime stage's install, run here: the CLI starts from a production-only tree, validates and runs a job", async () => {
		// The runtime stage: package.json and the lockfile, production dependencies, the built dist/ and jobs/.
		const app = join(tempDir("image-"), "app");
		mkdirSync(app);
		for (const file of ["package.json", "package-lock.json"]) cpSync(join(ROOT, file), join(app, file));
		// From npm's cache (npm ci filled it); the registry only for what is missing there.
		await run("npm", [...INSTALL.split(" ").slice(1), "--prefer-offline", "--no-audit", "--no-fund"], {
			cwd: app,
			env: { ...process.env, npm_config_update_notifier: "false" },
		});
		// better-sqlite3's addon comes prebuilt in its package (Node-API): the install compiles nothing.
		expect(existsSync(join(app, "node_modules", "better-sqlite3", "prebuilds", `linux-${process.arch}.node`))).toBe(
			true,
		);
		cpSync(join(ROOT, "dist"), join(app, "dist"), { recursive: true });
		cpSync(join(ROOT, "jobs"), join(app, "jobs"), { recursive: true });
		// Nothing the lockfile marks as needed only for development (TypeScript, Vitest, Biome, …).
		const devOnly = Object.entries(LOCK.packages).filter(([path, entry]) => path !== "" && entry.dev === true);
		expect(devOnly.length).toBeGreaterThan(0);
		for (const [path] of devOnly) expect(existsSync(join(app, path)), path).toBe(false);
		// `scrapejob` on PATH, made executable and linked as the image's last stage does (tsc writes no mode bits).
		chmodSync(join(app, "dist", "cli", "bin.js"), 0o755);
		const bin = tempDir("image-bin-");
		symlinkSync(join(app, "dist", "cli", "bin.js"), join(bin, "scrapejob"));
		const env = { PATH: `${bin}:${process.env.PATH ?? ""}`, TMPDIR: process.env.TMPDIR, NODE_ENV: "production" };
		const scrapejob = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
			run("scrapejob", args, { cwd: app, env: { ...env, ...extra } });

		const help = await scrapejob(["--help"]);
		expect(help.stdout).toContain("Usage: scrapejob");
		const valid = await scrapejob(["validate", "jobs/demo.yaml"], { SCRAPEJOB_DEMO_SITE: "https://demo.example" });
		expect(valid.stdout).toContain("valid");
		// A whole run (the sandbox's emulator and demo site): the job store, extraction, CSV and report load.
		const out = tempDir("image-out-");
		await scrapejob(["run", "jobs/demo.yaml", "--sandbox", "--quiet", "--out", out]);
		const [runDir] = readdirSync(join(out, "demo")).filter((name) => !name.startsWith(".") && !name.includes("."));
		for (const file of ["results.jsonl", "results.csv", "summary.json", "report.html"])
			expect(existsSync(join(out, "demo", runDir!, file)), file).toBe(true);
		expect(existsSync(join(out, "demo", "history.sqlite"))).toBe(true);

		// An addon that does not load in this Node (as one built under another Node): named as such, with the
		// command that rebuilds it, exit 2 before anything is sent — never "output failed", the store kept.
		const addon = join(app, "node_modules", "better-sqlite3", "prebuilds", `linux-${process.arch}.node`);
		writeFileSync(addon, "not an ELF file: built for another Node");
		const refused = await scrapejob(["run", "jobs/demo.yaml", "--sandbox", "--quiet", "--out", out]).then(
			() => null,
			(error: { code: number; stderr: string }) => error,
		);
		expect(refused?.code).toBe(2);
		expect(refused?.stderr).toContain("better-sqlite3 cannot be loaded");
		expect(refused?.stderr).toContain("npm rebuild better-sqlite3");
		expect(refused?.stderr).not.toContain("output failed");
		expect(existsSync(join(out, "demo", "history.sqlite"))).toBe(true);
		expect(readdirSync(join(out, "demo")).filter((name) => /^\d{8}T/.test(name))).toHaveLength(1);
	}, 120_000);
});
