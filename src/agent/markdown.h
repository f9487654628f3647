// Markdown for the generated references (docs/metrics.md, README.md's configuration section).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace gpuscope {

// `text` as the content of one markdown table cell: '|' escaped (it would end the cell), '<' and '>' as
// entities (GitHub would take "<pid>" for an HTML tag and drop it), newlines as spaces.
std::string MarkdownCell(std::string_view text);

}  // namespace gpuscope
