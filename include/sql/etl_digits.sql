-- ETL for one data interval (a manual run: the week before it): the raw digits records of the interval's days,
-- deduplicated, invalid rows dropped, written once as Parquet for this run.
UNLOAD (
    SELECT record_id, label, pixels, dt
    FROM (
        SELECT record_id, label, pixels, dt,
               row_number() OVER (PARTITION BY record_id ORDER BY dt) AS copy
        FROM {{ params.database }}.raw_digits
        WHERE dt >= '{{ ti.xcom_pull(task_ids="plan_run")["window_start"] }}'
          AND dt < '{{ ti.xcom_pull(task_ids="plan_run")["window_end"] }}'
          AND label BETWEEN 0 AND 9
          AND pixels IS NOT NULL
    )
    WHERE copy = 1
)
TO '{{ ti.xcom_pull(task_ids="plan_run")["etl_prefix"] }}'
WITH (format = 'PARQUET')
