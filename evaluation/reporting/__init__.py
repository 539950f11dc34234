"""What a person reads: summary and report files, comparisons, console text, the HTML viewer."""
