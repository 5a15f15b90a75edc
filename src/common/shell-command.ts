/** How the manual calls the CLI: `npx scrapejob` works after `npm ci`, a bare `scrapejob` only when installed globally. */
export const CLI_NAME = "npx scrapejob";

/** A word safe to paste into a POSIX shell: as is when plain, else single-quoted. */
export function shellWord(word: string): string {
	return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A scrapejob command line as it must be pasted: `npx scrapejob` and each argument shell-quoted. */
export function cliCommand(args: readonly string[]): string {
	return [CLI_NAME, ...args.map(shellWord)].join(" ");
}
