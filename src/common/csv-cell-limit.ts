/** `output.csv_max_cell` by default: the longest cell Excel and LibreOffice hold (the job schema and the CSV sink share it). */
export const DEFAULT_CSV_MAX_CELL = 32_767;
/** The least `output.csv_max_cell` other than 0 (no limit): room for the marker of any cut. */
export const MIN_CSV_MAX_CELL = 32;
