"""Executors do the work moto only records: they run jobs as local processes."""
