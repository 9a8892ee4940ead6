"""The dashboard's page, script and style: a package so that they ship as package data."""
