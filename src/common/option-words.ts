import { cliCommand } from "./shell-command.js";

/**
 * How an entry point spells the options a message names. A message built below the entry points says
 * `--max-credits` to the CLI's user and `maxCredits` to a library caller from one text: the entry
 * point passes its table, and the code that words the message reads it.
 */
export interface OptionWords {
	/** The resume option named: `--resume` / `resume`. */
	readonly resume: string;
	/** Resuming, as an instruction: `--resume` / `resume: true`. */
	readonly resumeOn: string;
	/** Resuming with a budget above the one reached: `--resume --max-credits <larger>`. */
	readonly resumeWithLargerBudget: string;
	/** A budget above the one reached: `--max-credits <larger>`. */
	readonly largerBudget: string;
	/** The budget option named (a number follows): `--max-credits` / `maxCredits`. */
	readonly maxCredits: string;
	/** Continuing, as an instruction: `--continue` / `continue: true`. */
	readonly continueOn: string;
	/** Accepting changed targets on a resume, as an instruction: `--force` / `force: true`. */
	readonly forceOn: string;
	/** The repair option named: `--repair` / `repair`. */
	readonly repair: string;
	/** Repairing, as an instruction: `--repair` / `repair: true`. */
	readonly repairOn: string;
	/** The fleet option named: `--fleet` / `fleet`. */
	readonly fleet: string;
	/** The fleet option with its value: `--fleet URL` / `the fleet option`. */
	readonly fleetUrl: string;
	/** The fleet run option named: `--fleet-run` / `fleetRun`. */
	readonly fleetRun: string;
	/** The shard option named: `--shard` / `shard`. */
	readonly shard: string;
	/** The accept option named: `--accept` / `accept`. */
	readonly accept: string;
	/** The retry-failed option named: `--retry-failed` / `retryFailed`. */
	readonly retryFailed: string;
	/** The sandbox, as an instruction: `--sandbox` / `sandbox: true`. */
	readonly sandboxOn: string;
	/** A re-extraction's source run option named: `--run` / `run`. */
	readonly run: string;
	/** Where a job file's allowed keys are listed: the `schema` command / the schema file the package ships. */
	readonly allowedKeys: string;
	/** The job file's schema, after "see": `` `npx scrapejob schema` `` / the schema file the package ships. */
	readonly schema: string;
}

/** The CLI's flags: the words every message had before the library had words of its own. */
export const CLI_WORDS: OptionWords = {
	resume: "--resume",
	resumeOn: "--resume",
	resumeWithLargerBudget: "--resume --max-credits <larger>",
	largerBudget: "--max-credits <larger>",
	maxCredits: "--max-credits",
	continueOn: "--continue",
	forceOn: "--force",
	repair: "--repair",
	repairOn: "--repair",
	fleet: "--fleet",
	fleetUrl: "--fleet URL",
	fleetRun: "--fleet-run",
	shard: "--shard",
	accept: "--accept",
	retryFailed: "--retry-failed",
	sandboxOn: "--sandbox",
	run: "--run",
	allowedKeys: `run \`${cliCommand(["schema"])}\` for the allowed keys`,
	schema: `\`${cliCommand(["schema"])}\``,
};

/** The library's option names (`runJobFile`, `extractJobFile`). */
export const LIBRARY_WORDS: OptionWords = {
	resume: "resume",
	resumeOn: "resume: true",
	resumeWithLargerBudget: "resume: true and a larger maxCredits",
	largerBudget: "a larger maxCredits",
	maxCredits: "maxCredits",
	continueOn: "continue: true",
	forceOn: "force: true",
	repair: "repair",
	repairOn: "repair: true",
	fleet: "fleet",
	fleetUrl: "the fleet option",
	fleetRun: "fleetRun",
	shard: "shard",
	accept: "accept",
	retryFailed: "retryFailed",
	sandboxOn: "sandbox: true",
	run: "run",
	// A library caller has no CLI to run: the same schema is the file the package ships.
	allowedKeys: "the allowed keys are in node_modules/scrapejob/jobs/job.schema.json",
	schema: "node_modules/scrapejob/jobs/job.schema.json",
};
