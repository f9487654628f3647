# filled in by the parser's author
