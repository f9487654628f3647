// Table: rows of a report (`gpuscope chargeback`, `inventory`, ...) with one renderer per output
// format, so every command that prints a table offers the same three: aligned text for a terminal
// (numbers right-aligned), CSV (RFC 4180 quoting) and JSON (an array of objects keyed by column name,
// numeric columns as JSON numbers). A command fills the cells as text, already rounded for people;
// a numeric cell that is empty or not a number is null in JSON.
//
// Thread-safety: value types and free functions.
#pragma once

#include <string>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

struct TableColumn {
  std::string name;
  bool numeric = false;
};

struct Table {
  std::vector<TableColumn> columns;
  std::vector<std::vector<std::string>> rows;  // each as long as columns
};

enum class TableFormat { kText, kCsv, kJson };

// "table"/"text" -> kText, "csv", "json". InvalidArgument naming the accepted values otherwise.
Status ParseTableFormat(const std::string& text, TableFormat* format);

std::string RenderTableText(const Table& table);
std::string RenderTableCsv(const Table& table);
std::string RenderTableJson(const Table& table);
std::string RenderTable(const Table& table, TableFormat format);

}  // namespace gpuscope
