"""A team's own queries as scenario files, without their data: the tables a query reads,
with their schemas and catalog statistics (catalog), the query and those tables written
as a scenario (to_scenario), a DataFrame's analysed plan written back as SQL (frame_sql),
and what production planned, read from a Spark event log (event_log). A tool beside the
suite; imports the stages below it, never report or deploy.
"""
