#include "src/cli/table_output.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

const std::string& Cell(const Table& table, size_t row, size_t column) {
  static const std::string kEmpty;
  const std::vector<std::string>& cells = table.rows[row];
  return column < cells.size() ? cells[column] : kEmpty;
}

std::string CsvField(const std::string& value) {
  if (value.find_first_of(",\"\r\n") == std::string::npos) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

Status ParseTableFormat(const std::string& text, TableFormat* format) {
  if (text == "table" || text == "text") {
    *format = TableFormat::kText;
  } else if (text == "csv") {
    *format = TableFormat::kCsv;
  } else if (text == "json") {
    *format = TableFormat::kJson;
  } else {
    return Status::InvalidArgument("--format must be table, csv or json, not '" + text + "'");
  }
  return Status::Ok();
}

std::string RenderTableText(const Table& table) {
  std::vector<size_t> width(table.columns.size());
  for (size_t c = 0; c < table.columns.size(); ++c) {
    width[c] = table.columns[c].name.size();
    for (size_t r = 0; r < table.rows.size(); ++r) width[c] = std::max(width[c], Cell(table, r, c).size());
  }
  auto line = [&](auto cell_of) {
    std::string out;
    for (size_t c = 0; c < table.columns.size(); ++c) {
      const std::string& cell = cell_of(c);
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      if (c > 0) out += "  ";
      out += table.columns[c].numeric ? pad + cell : (c + 1 == table.columns.size() ? cell : cell + pad);
    }
    return out + "\n";
  };
  std::string out = line([&](size_t c) -> const std::string& { return table.columns[c].name; });
  for (size_t r = 0; r < table.rows.size(); ++r) {
    out += line([&](size_t c) -> const std::string& { return Cell(table, r, c); });
  }
  return out;
}

std::string RenderTableCsv(const Table& table) {
  std::string out;
  for (size_t c = 0; c < table.columns.size(); ++c) out += (c ? "," : "") + CsvField(table.columns[c].name);
  out += "\r\n";
  for (size_t r = 0; r < table.rows.size(); ++r) {
    for (size_t c = 0; c < table.columns.size(); ++c) out += (c ? "," : "") + CsvField(Cell(table, r, c));
    out += "\r\n";
  }
  return out;
}

std::string RenderTableJson(const Table& table) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 0; r < table.rows.size(); ++r) {
    nlohmann::json row = nlohmann::json::object();
    for (size_t c = 0; c < table.columns.size(); ++c) {
      const std::string& cell = Cell(table, r, c);
      if (!table.columns[c].numeric) {
        row[table.columns[c].name] = cell;
        continue;
      }
      char* end = nullptr;
      const double value = std::strtod(cell.c_str(), &end);
      row[table.columns[c].name] =
          (cell.empty() || *end != '\0' || !std::isfinite(value)) ? nlohmann::json() : nlohmann::json(value);
    }
    rows.push_back(std::move(row));
  }
  // Invalid UTF-8 in a label becomes U+FFFD rather than an exception.
  return rows.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string RenderTable(const Table& table, TableFormat format) {
  switch (format) {
    case TableFormat::kCsv:
      return RenderTableCsv(table);
    case TableFormat::kJson:
      return RenderTableJson(table);
    case TableFormat::kText:
      break;
  }
  return RenderTableText(table);
}

}  // namespace gpuscope
