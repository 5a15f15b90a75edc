export type { CliContext } from "./context.js";
export { EXIT, type ExitCode } from "./exit-codes.js";
export { createProgram, main } from "./main.js";
