// Renders a Report as text, JSON and CSV and writes the files. Failures to
// write (missing or unwritable directory, full disk) are logged once and
// never thrown into the profiled program. JSON is built in the definitions
// (detail/report_writer_impl.hpp): a compiled build's users never include it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/report.hpp>

namespace pasta::detail {

// A cell as the text and CSV files show it; doubles with `precision` digits.
PASTA_FUNC std::string cell_text(const Cell& c, int precision);

// The text report; `top` limits the rows shown per table (the files always
// hold every row).
// `console`: the short form the terminal gets (no empty tables; a tool with
// nothing recorded is one line).
PASTA_FUNC std::string render_text(const Report& r, std::size_t top, bool console = false);
// Rows of a table the console shows at most.
inline constexpr std::size_t console_rows = 10;

// One table as RFC 4180 CSV.
PASTA_FUNC std::string to_csv(const Table& t);

// Creates the output directory; logs once and returns false if it cannot.
PASTA_FUNC bool prepare_output_dir(const Config& cfg);

// Prints and writes one report (text, JSON, CSV as Config::formats says).
// Returns the files written.
PASTA_FUNC std::vector<std::string> write_report(const Report& r, const Config& cfg);

}  // namespace pasta::detail

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/report_writer_impl.hpp>
#endif
