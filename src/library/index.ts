export { NoScraperAccessError, type RunJobFileOptions, type RunJobFileResult, runJobFile } from "./run-job-file.js";
