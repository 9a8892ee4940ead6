"""The print agent: runs beside a thermal printer and prints the badges the coordinator grants."""
