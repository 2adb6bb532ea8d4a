"""Reports: each version's results.json and page (version_report, results.schema.json),
the merged cross-version page (merged), the upgrade diff (diff), the CI summary
(summary), `accept` (observations written back into scenario files), and what every page
shares (pages, templates/). Every file is written atomically. Imports core, scenario,
observe and check.
"""
