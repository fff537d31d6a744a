"""The aggregation stages $setWindowFields, $densify, $fill, $bucketAuto, $redact and
$graphLookup through pymongo.

Expected results are the examples of MongoDB 7.0's manual pages for each stage and
window operator, and the error codes MongoDB answers.
"""

from __future__ import annotations

import datetime

import pytest
from pymongo.errors import OperationFailure


@pytest.fixture(autouse=True)
def fresh_database(db):
    """Each test starts from an empty database, also on a backend kept between runs."""
    db.client.drop_database(db.name)
    yield


def utc(*args):
    return datetime.datetime(*args)


CAKE_SALES = [
    {"_id": 0, "type": "chocolate", "orderDate": utc(2020, 5, 18, 14, 10, 30), "state": "CA", "price": 13, "quantity": 120},
    {"_id": 1, "type": "chocolate", "orderDate": utc(2021, 3, 20, 11, 30, 5), "state": "WA", "price": 14, "quantity": 140},
    {"_id": 2, "type": "vanilla", "orderDate": utc(2021, 1, 11, 6, 31, 15), "state": "CA", "price": 12, "quantity": 145},
    {"_id": 3, "type": "vanilla", "orderDate": utc(2020, 2, 8, 13, 13, 23), "state": "WA", "price": 13, "quantity": 104},
    {"_id": 4, "type": "strawberry", "orderDate": utc(2019, 5, 18, 16, 9, 1), "state": "CA", "price": 41, "quantity": 162},
    {"_id": 5, "type": "strawberry", "orderDate": utc(2019, 1, 8, 6, 12, 3), "state": "WA", "price": 43, "quantity": 134},
]


@pytest.fixture
def cakes(db):
    db.cakeSales.insert_many([dict(d) for d in CAKE_SALES])
    return db.cakeSales


def column(docs, field):
    return [(d["_id"], d.get(field)) for d in docs]


def error_code(collection, pipeline):
    with pytest.raises(OperationFailure) as raised:
        list(collection.aggregate(pipeline))
    return raised.value.code


# --------------------------------------------------------------------------- $setWindowFields


def test_cumulative_quantity_for_each_state(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"orderDate": 1},
        "output": {"cumulativeQuantityForState": {
            "$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}}}}]))
    assert column(docs, "cumulativeQuantityForState") == [
        (4, 162), (0, 282), (2, 427), (5, 134), (3, 238), (1, 378)]


def test_cumulative_quantity_for_each_year(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": {"$year": "$orderDate"}, "sortBy": {"orderDate": 1},
        "output": {"cumulativeQuantityForYear": {
            "$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}}}}]))
    assert column(docs, "cumulativeQuantityForYear") == [
        (5, 134), (4, 296), (3, 104), (0, 224), (2, 145), (1, 285)]


def test_moving_average_for_each_year(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": {"$year": "$orderDate"}, "sortBy": {"orderDate": 1},
        "output": {"averageQuantity": {"$avg": "$quantity", "window": {"documents": [-1, 0]}}}}}]))
    assert column(docs, "averageQuantity") == [
        (5, 134), (4, 148), (3, 104), (0, 112), (2, 145), (1, 142.5)]


def test_cumulative_and_maximum_quantity_for_each_year(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": {"$year": "$orderDate"}, "sortBy": {"orderDate": 1},
        "output": {
            "cumulativeQuantityForYear": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}},
            "maximumQuantityForYear": {"$max": "$quantity", "window": {"documents": ["unbounded", "unbounded"]}},
        }}}]))
    assert column(docs, "maximumQuantityForYear") == [
        (5, 162), (4, 162), (3, 120), (0, 120), (2, 145), (1, 145)]


def test_range_window_of_prices(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"price": 1},
        "output": {"quantityFromSimilarOrders": {"$sum": "$quantity", "window": {"range": [-10, 10]}}}}}]))
    assert column(docs, "quantityFromSimilarOrders") == [
        (2, 265), (0, 265), (4, 162), (3, 244), (1, 244), (5, 134)]


def test_range_windows_with_month_units(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"orderDate": 1},
        "output": {"recentOrders": {"$push": "$orderDate", "window": {"range": ["unbounded", 10], "unit": "month"}}}}}]))
    by_id = {d["_id"]: d["recentOrders"] for d in docs}
    assert by_id[4] == [utc(2019, 5, 18, 16, 9, 1)]
    assert by_id[0] == [utc(2019, 5, 18, 16, 9, 1), utc(2020, 5, 18, 14, 10, 30), utc(2021, 1, 11, 6, 31, 15)]
    assert by_id[5] == [utc(2019, 1, 8, 6, 12, 3)]
    assert len(by_id[2]) == 3 and len(by_id[1]) == 3
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"orderDate": 1},
        "output": {"recentOrders": {"$push": "$orderDate", "window": {"range": ["unbounded", -10], "unit": "month"}}}}}]))
    by_id = {d["_id"]: d["recentOrders"] for d in docs}
    assert by_id[4] == [] and by_id[5] == []
    assert by_id[2] == [utc(2019, 5, 18, 16, 9, 1)]
    assert by_id[1] == [utc(2019, 1, 8, 6, 12, 3), utc(2020, 2, 8, 13, 13, 23)]


def test_rank_dense_rank_and_document_number(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"quantity": -1},
        "output": {"rank": {"$rank": {}}, "dense": {"$denseRank": {}}, "number": {"$documentNumber": {}}}}}]))
    assert column(docs, "rank") == [(4, 1), (2, 2), (0, 3), (1, 1), (5, 2), (3, 3)]
    assert column(docs, "number") == [(4, 1), (2, 2), (0, 3), (1, 1), (5, 2), (3, 3)]


def test_rank_with_ties(db):
    db.scores.insert_many([{"_id": i, "score": s} for i, s in enumerate([10, 20, 20, 30])])
    docs = list(db.scores.aggregate([{"$setWindowFields": {
        "sortBy": {"score": 1},
        "output": {"rank": {"$rank": {}}, "dense": {"$denseRank": {}}, "n": {"$documentNumber": {}}}}}]))
    assert [(d["rank"], d["dense"], d["n"]) for d in docs] == [(1, 1, 1), (2, 2, 2), (2, 2, 3), (4, 3, 4)]


def test_shift(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"quantity": -1},
        "output": {"shiftQuantityForState": {"$shift": {"output": "$quantity", "by": 1, "default": "Not available"}}}}}]))
    assert column(docs, "shiftQuantityForState") == [
        (4, 145), (2, 120), (0, "Not available"), (1, 134), (5, 104), (3, "Not available")]
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"quantity": -1},
        "output": {"previous": {"$shift": {"output": "$quantity", "by": -1}}}}}]))
    assert column(docs, "previous") == [(4, None), (2, 162), (0, 145), (1, None), (5, 140), (3, 134)]


def test_push_add_to_set_first_last_min_count(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"orderDate": 1},
        "output": {
            "types": {"$push": "$type", "window": {"documents": ["unbounded", "current"]}},
            "prices": {"$addToSet": "$price", "window": {"documents": ["unbounded", "unbounded"]}},
            "first": {"$first": "$quantity", "window": {"documents": [-1, 0]}},
            "last": {"$last": "$quantity", "window": {"documents": [0, 1]}},
            "min": {"$min": "$quantity"},
            "count": {"$count": {}},
        }}}]))
    ca = docs[:3]
    assert [d["types"] for d in ca] == [["strawberry"], ["strawberry", "chocolate"], ["strawberry", "chocolate", "vanilla"]]
    assert sorted(ca[0]["prices"]) == [12, 13, 41]
    assert [d["first"] for d in ca] == [162, 162, 120]
    assert [d["last"] for d in ca] == [120, 145, 145]
    assert [d["min"] for d in ca] == [120, 120, 120]
    assert [d["count"] for d in docs] == [3] * 6


def test_std_dev_and_covariance(cakes):
    docs = list(cakes.aggregate([{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"orderDate": 1},
        "output": {
            "stdDevPop": {"$stdDevPop": "$quantity", "window": {"documents": ["unbounded", "current"]}},
            "stdDevSamp": {"$stdDevSamp": "$quantity", "window": {"documents": ["unbounded", "current"]}},
            "covariancePop": {"$covariancePop": [{"$year": "$orderDate"}, "$quantity"],
                              "window": {"documents": ["unbounded", "current"]}},
            "covarianceSamp": {"$covarianceSamp": [{"$year": "$orderDate"}, "$quantity"],
                               "window": {"documents": ["unbounded", "current"]}},
        }}}]))
    ca = docs[:3]
    assert ca[0]["stdDevPop"] == 0 and ca[0]["stdDevSamp"] is None
    assert ca[1]["stdDevPop"] == pytest.approx(21) and ca[1]["stdDevSamp"] == pytest.approx(29.698484809835)
    assert ca[0]["covariancePop"] == 0 and ca[0]["covarianceSamp"] is None
    assert ca[1]["covariancePop"] == pytest.approx(-10.5) and ca[1]["covarianceSamp"] == pytest.approx(-21)
    assert ca[2]["covariancePop"] == pytest.approx(-17 / 3)


def test_exp_moving_average(db):
    base = utc(2020, 5, 18, 20)
    rows = [("ABC", [13, 15.4, 12, 11.7]), ("DEF", [82, 94, 112, 97.3])]
    db.stockPrices.insert_many([
        {"stock": s, "date": base + datetime.timedelta(days=i), "price": p}
        for s, prices in rows for i, p in enumerate(prices)])
    n2 = list(db.stockPrices.aggregate([{"$setWindowFields": {
        "partitionBy": "$stock", "sortBy": {"date": 1},
        "output": {"expMovingAvgForStock": {"$expMovingAvg": {"input": "$price", "N": 2}}}}}]))
    assert [d["expMovingAvgForStock"] for d in n2] == pytest.approx(
        [13, 14.6, 12.866666666666667, 12.088888888888889, 82, 90, 104.66666666666667, 99.75555555555556])
    alpha = list(db.stockPrices.aggregate([{"$setWindowFields": {
        "partitionBy": "$stock", "sortBy": {"date": 1},
        "output": {"expMovingAvgForStock": {"$expMovingAvg": {"input": "$price", "alpha": 0.75}}}}}]))
    assert [d["expMovingAvgForStock"] for d in alpha] == pytest.approx(
        [13, 14.8, 12.7, 11.95, 82, 91, 106.75, 99.6625])


def test_derivative_of_truck_miles(db):
    base = utc(2020, 5, 18, 14, 10, 30)
    miles = {"1": [1295.1, 1295.63, 1296.25, 1296.76], "2": [10234.1, 10234.33, 10234.73, 10235.13]}
    db.deliveryFleet.insert_many([
        {"truckID": t, "timeStamp": base + datetime.timedelta(seconds=30 * i), "miles": m}
        for t, ms in miles.items() for i, m in enumerate(ms)])
    docs = list(db.deliveryFleet.aggregate([
        {"$setWindowFields": {"partitionBy": "$truckID", "sortBy": {"timeStamp": 1}, "output": {
            "truckAverageSpeed": {"$derivative": {"input": "$miles", "unit": "hour"},
                                  "window": {"range": [-30, 0], "unit": "second"}}}}},
        {"$match": {"truckAverageSpeed": {"$gt": 50}}},
    ]))
    assert [(d["truckID"], d["miles"]) for d in docs] == [("1", 1295.63), ("1", 1296.25), ("1", 1296.76)]
    # The manual's figures to the last digit: the same doubles MongoDB computes.
    assert [d["truckAverageSpeed"] for d in docs] == [63.60000000002401, 74.3999999999869, 61.199999999998909]


def test_integral_of_power_meter(db):
    base = utc(2020, 5, 18, 14, 10, 30)
    kw = {"1": [2.95, 2.7, 2.45, 3.11], "2": [2.5, 2.25, 2.6, 3.01]}
    db.powerConsumption.insert_many([
        {"powerMeterID": m, "timeStamp": base + datetime.timedelta(seconds=30 * i), "kilowatts": k}
        for m, ks in kw.items() for i, k in enumerate(ks)])
    docs = list(db.powerConsumption.aggregate([{"$setWindowFields": {
        "partitionBy": "$powerMeterID", "sortBy": {"timeStamp": 1}, "output": {
            "powerMeterKilowattHours": {"$integral": {"input": "$kilowatts", "unit": "hour"},
                                        "window": {"range": ["unbounded", "current"], "unit": "minute"}}}}}]))
    assert [d["powerMeterKilowattHours"] for d in docs] == pytest.approx(
        [0, 0.0235416666666666666, 0.045, 0.0681666666666666666,
         0, 0.0197916666666666666, 0.04, 0.0633750000000000000])


def hourly_stock(db, prices):
    base = utc(2021, 3, 8, 9)
    rows = []
    for i, p in enumerate(prices):
        row = {"time": base + datetime.timedelta(hours=i)}
        if p is not None:
            row["price"] = p
        rows.append(row)
    db.stock.insert_many(rows)


def test_locf(db):
    hourly_stock(db, [500, None, 515, None, None, 485])
    docs = list(db.stock.aggregate([
        {"$setWindowFields": {"sortBy": {"time": 1}, "output": {"price": {"$locf": "$price"}}}}]))
    assert [d["price"] for d in docs] == [500, 500, 515, 515, 515, 485]


def test_linear_fill(db):
    hourly_stock(db, [20, None, 24, None, None, 30])
    docs = list(db.stock.aggregate([
        {"$setWindowFields": {"sortBy": {"time": 1}, "output": {"price": {"$linearFill": "$price"}}}}]))
    assert [d["price"] for d in docs] == pytest.approx([20, 22, 24, 26, 28, 30])


@pytest.mark.parametrize(
    "stage, code",
    [
        ({"sortBy": {"a": 1}, "output": {"r": {"$rank": {}, "window": {"documents": [0, 1]}}}}, 5371601),
        ({"output": {"r": {"$rank": {}}}}, 5371602),
        ({"sortBy": {"a": 1, "b": 1}, "output": {"r": {"$documentNumber": {}}}}, 5371602),
        ({"sortBy": {"a": 1}, "output": {"r": {"$denseRank": 1}}}, 5371603),
        ({"output": {"s": {"$sum": "$a", "window": {"documents": [-1, 0]}}}}, 5339901),
        ({"sortBy": {"a": 1, "b": 1}, "output": {"s": {"$sum": "$a", "window": {"range": [-1, 0]}}}}, 5339902),
        ({"sortBy": {"a": 1}, "output": {"s": {"$sum": "$a", "window": {"documents": [1, 0]}}}}, 5339900),
        ({"sortBy": {"a": 1}, "output": {"s": {"$derivative": {"input": "$a"}}}}, 9),
        ({"output": {"s": {"$shift": {"output": "$a", "by": 1}}}}, 9),
        ({"sortBy": {"a": 1}, "output": {"s": {"$expMovingAvg": {"input": "$a", "N": 2},
                                                "window": {"documents": [-1, 0]}}}}, 9),
        ({"sortBy": {"a": 1}, "output": {"s": {"$expMovingAvg": {"input": "$a"}}}}, 9),
        ({"output": {"s": {"$linearFill": "$a"}}}, 605001),
        ({"partitionBy": {"$literal": [1]}, "output": {"s": {"$sum": 1}}}, 14),
        ({"output": {"s": {"$sum": 1}}, "extra": 1}, 40415),
        ({"sortBy": {"a": 1}}, 40414),
    ],
)
def test_set_window_fields_errors(coll, stage, code):
    coll.insert_one({"a": 1, "b": 2})
    assert error_code(coll, [{"$setWindowFields": stage}]) == code


def test_set_window_fields_runtime_errors(coll):
    coll.insert_many([{"a": [1, 2], "t": utc(2021, 1, 1), "n": 1}, {"a": "x", "t": utc(2021, 1, 2), "n": 2}])
    assert error_code(coll, [{"$setWindowFields": {"partitionBy": "$a", "output": {"s": {"$sum": 1}}}}]) == 14
    assert error_code(coll, [{"$setWindowFields": {"sortBy": {"a": 1}, "output": {
        "s": {"$sum": 1, "window": {"range": [0, 1]}}}}}]) == 5429414
    assert error_code(coll, [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "s": {"$derivative": {"input": "$n"}, "window": {"documents": [-1, 0]}}}}}]) == 5624901
    assert error_code(coll, [{"$setWindowFields": {"sortBy": {"n": 1}, "output": {
        "s": {"$integral": {"input": "$n", "unit": "second"}}}}}]) == 5423901


# --------------------------------------------------------------------------- $densify


def test_densify_time_series_with_explicit_bounds(db):
    db.weather.insert_many([
        {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": utc(2021, 5, 18, h), "temp": t}
        for h, t in [(0, 12), (4, 11), (8, 11), (12, 12)]])
    docs = list(db.weather.aggregate([
        {"$densify": {"field": "timestamp", "range": {"step": 1, "unit": "hour",
                                                      "bounds": [utc(2021, 5, 18, 0), utc(2021, 5, 18, 8)]}}},
        {"$project": {"_id": 0}}]))
    assert [d["timestamp"].hour for d in docs] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 12]
    assert docs[1] == {"timestamp": utc(2021, 5, 18, 1)}
    assert docs[4]["temp"] == 11


COFFEE = [
    {"altitude": 600, "variety": "Arabica Typica", "score": 68.3},
    {"altitude": 750, "variety": "Arabica Typica", "score": 69.5},
    {"altitude": 950, "variety": "Arabica Typica", "score": 70.5},
    {"altitude": 1250, "variety": "Gesha", "score": 88.15},
    {"altitude": 1700, "variety": "Gesha", "score": 95.5, "price": 1029},
]


def test_densify_full_range_with_partitions(db):
    db.coffee.insert_many([dict(d) for d in COFFEE])
    docs = list(db.coffee.aggregate([
        {"$densify": {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "full", "step": 200}}}]))
    got = sorted((d["variety"], d["altitude"]) for d in docs)
    arabica = [600, 750, 800, 950, 1000, 1200, 1400, 1600]
    gesha = [600, 800, 1000, 1200, 1250, 1400, 1600, 1700]
    assert got == [("Arabica Typica", a) for a in arabica] + [("Gesha", g) for g in gesha]
    assert [d["altitude"] for d in docs] == sorted(d["altitude"] for d in docs)
    generated = [d for d in docs if "_id" not in d]
    assert {"altitude": 800, "variety": "Gesha"} in generated


def test_densify_each_partition_range(db):
    db.coffee.insert_many([dict(d) for d in COFFEE])
    docs = list(db.coffee.aggregate([
        {"$densify": {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "partition", "step": 200}}},
        {"$project": {"_id": 0, "variety": 1, "altitude": 1}}]))
    assert [(d["variety"], d["altitude"]) for d in docs] == [
        ("Arabica Typica", 600), ("Arabica Typica", 750), ("Arabica Typica", 800), ("Arabica Typica", 950),
        ("Gesha", 1250), ("Gesha", 1450), ("Gesha", 1650), ("Gesha", 1700)]


@pytest.mark.parametrize(
    "range_spec, code",
    [
        ({"step": 0, "bounds": "full"}, 5733401),
        ({"step": 1, "bounds": "partition"}, 5733408),
        ({"step": 1, "bounds": [5, 1]}, 5733402),
        ({"step": 1, "bounds": [1, 5], "unit": "hour"}, 5733409),
        ({"step": 1, "bounds": [utc(2021, 1, 1), utc(2021, 1, 2)]}, 5733410),
        ({"step": 1, "bounds": "everything"}, 5946802),
    ],
)
def test_densify_errors(coll, range_spec, code):
    coll.insert_one({"a": 1})
    assert error_code(coll, [{"$densify": {"field": "a", "range": range_spec}}]) == code


# --------------------------------------------------------------------------- $fill


def test_fill_with_a_constant_and_the_last_observation(db):
    db.restaurantReviews.insert_many([
        {"_id": 1, "date": utc(2021, 3, 8), "score": 90, "bootsSold": 10, "sandalsSold": 20},
        {"_id": 2, "date": utc(2021, 3, 9), "bootsSold": 5, "sandalsSold": 10},
        {"_id": 3, "date": utc(2021, 3, 10), "score": 80, "sneakersSold": 12},
        {"_id": 4, "date": utc(2021, 3, 11), "bootsSold": 16, "sandalsSold": 20, "sneakersSold": 16},
    ])
    docs = list(db.restaurantReviews.aggregate([{"$fill": {
        "sortBy": {"date": 1},
        "output": {"score": {"method": "locf"}, "bootsSold": {"value": 0},
                   "sandalsSold": {"value": 0}, "sneakersSold": {"value": 0}}}}]))
    assert [(d["_id"], d["score"], d["bootsSold"], d["sandalsSold"], d["sneakersSold"]) for d in docs] == [
        (1, 90, 10, 20, 0), (2, 90, 5, 10, 0), (3, 80, 0, 0, 12), (4, 80, 16, 20, 16)]


def test_fill_linear_per_partition(db):
    db.stock.insert_many([
        {"sym": s, "t": t, **({"price": p} if p is not None else {})}
        for s, rows in [("A", [(1, 20), (2, None), (3, 24)]), ("B", [(1, 5), (2, None), (3, None), (4, 8)])]
        for t, p in rows])
    docs = list(db.stock.aggregate([{"$fill": {"partitionByFields": ["sym"], "sortBy": {"t": 1},
                                                "output": {"price": {"method": "linear"}}}}]))
    assert sorted((d["sym"], d["t"], d["price"]) for d in docs) == [
        ("A", 1, 20), ("A", 2, 22), ("A", 3, 24), ("B", 1, 5), ("B", 2, 6), ("B", 3, 7), ("B", 4, 8)]


@pytest.mark.parametrize(
    "spec, code",
    [
        ({"output": {"a": {"method": "mean"}}}, 6050201),
        ({"output": {"a": {"method": "locf", "value": 1}}}, 6050202),
        ({"partitionBy": "$p", "partitionByFields": ["p"], "output": {"a": {"value": 1}}}, 6050204),
        ({"output": {"a": {"method": "linear"}}}, 605001),
    ],
)
def test_fill_errors(coll, spec, code):
    coll.insert_one({"a": 1})
    assert error_code(coll, [{"$fill": spec}]) == code


# --------------------------------------------------------------------------- $bucketAuto


def test_bucket_auto_by_price(db):
    db.artwork.insert_many([
        {"_id": 1, "title": "The Pillars of Society", "artist": "Grosz", "year": 1926, "price": 199.99},
        {"_id": 2, "title": "Melancholy III", "artist": "Munch", "year": 1902, "price": 280.00},
        {"_id": 3, "title": "Dancer", "artist": "Miro", "year": 1925, "price": 76.04},
        {"_id": 4, "title": "The Great Wave off Kanagawa", "artist": "Hokusai", "price": 167.30},
        {"_id": 5, "title": "The Persistence of Memory", "artist": "Dali", "year": 1931, "price": 483.00},
        {"_id": 6, "title": "Composition VII", "artist": "Kandinsky", "year": 1913, "price": 385.00},
        {"_id": 7, "title": "The Scream", "artist": "Munch", "year": 1893},
        {"_id": 8, "title": "Blue Flower", "artist": "O'Keefe", "year": 1918, "price": 118.42},
    ])
    docs = list(db.artwork.aggregate([{"$bucketAuto": {"groupBy": "$price", "buckets": 4}}]))
    assert docs == [
        {"_id": {"min": None, "max": 118.42}, "count": 2},
        {"_id": {"min": 118.42, "max": 199.99}, "count": 2},
        {"_id": {"min": 199.99, "max": 385.0}, "count": 2},
        {"_id": {"min": 385.0, "max": 483.0}, "count": 2},
    ]
    docs = list(db.artwork.aggregate([{"$bucketAuto": {
        "groupBy": "$year", "buckets": 3,
        "output": {"count": {"$sum": 1}, "years": {"$push": "$year"}}}}]))
    assert docs[0]["_id"] == {"min": None, "max": 1913}
    assert [d["count"] for d in docs] == [3, 3, 2]


def test_bucket_auto_granularity(db):
    db.things.insert_many([{"_id": i} for i in range(100)])
    docs = list(db.things.aggregate([{"$bucketAuto": {"groupBy": "$_id", "buckets": 5, "granularity": "R5"}}]))
    assert docs == [
        {"_id": {"min": 0, "max": 25}, "count": 25},
        {"_id": {"min": 25, "max": 63}, "count": 38},
        {"_id": {"min": 63, "max": 100}, "count": 37},
    ]
    docs = list(db.things.aggregate([{"$bucketAuto": {"groupBy": "$_id", "buckets": 5, "granularity": "POWERSOF2"}}]))
    assert [d["_id"]["max"] for d in docs] == [32, 64, 128]
    docs = list(db.things.aggregate([{"$bucketAuto": {"groupBy": "$_id", "buckets": 4, "granularity": "1-2-5"}}]))
    assert [d["_id"] for d in docs] == [{"min": 0, "max": 50}, {"min": 50, "max": 100}]


@pytest.mark.parametrize(
    "spec, code",
    [
        ({"groupBy": "$v"}, 40246),
        ({"groupBy": "v", "buckets": 2}, 40239),
        ({"groupBy": "$v", "buckets": 0}, 40243),
        ({"groupBy": "$v", "buckets": "2"}, 40241),
        ({"groupBy": "$v", "buckets": 2, "granularity": "R7"}, 40257),
        ({"groupBy": "$v", "buckets": 2, "other": 1}, 40245),
    ],
)
def test_bucket_auto_errors(coll, spec, code):
    coll.insert_one({"v": 1})
    assert error_code(coll, [{"$bucketAuto": spec}]) == code


def test_bucket_auto_granularity_refuses_negative_values(coll):
    coll.insert_one({"v": -5})
    assert error_code(coll, [{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "E6"}}]) == 40260


# --------------------------------------------------------------------------- $redact


FORECAST = {
    "_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"], "year": 2014,
    "subsections": [
        {"subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1: This is the content of section 1."},
        {"subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2: This is the content of section 2."},
        {"subtitle": "Section 3: Budgeting", "tags": ["TK"],
         "content": {"text": "Section 3: This is the content of section 3.", "tags": ["HCS"]}},
    ],
}


def test_redact_descend_and_prune(db):
    db.forecasts.insert_one(FORECAST)
    user_access = ["STLW", "G"]
    docs = list(db.forecasts.aggregate([
        {"$match": {"year": 2014}},
        {"$redact": {"$cond": {
            "if": {"$gt": [{"$size": {"$setIntersection": ["$tags", user_access]}}, 0]},
            "then": "$$DESCEND", "else": "$$PRUNE"}}},
    ]))
    assert docs == [{
        "_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"], "year": 2014,
        "subsections": FORECAST["subsections"][:2],
    }]


def test_redact_keep_excludes_by_level(db):
    db.accounts.insert_many([
        {"_id": 1, "level": 1, "acct_id": "xyz123",
         "cc": {"level": 5, "type": "yy", "num": 0, "exp_date": utc(2015, 11, 1),
                "billing_addr": {"level": 5, "addr1": "123 ABC Street", "city": "Some City"},
                "shipping_addr": [{"level": 3, "addr1": "987 XYZ Ave", "city": "Some City"},
                                  {"level": 3, "addr1": "PO Box 0123", "city": "Some City"}]},
         "status": "A"}])
    docs = list(db.accounts.aggregate([
        {"$match": {"status": "A"}},
        {"$redact": {"$cond": {"if": {"$eq": ["$level", 5]}, "then": "$$PRUNE", "else": "$$DESCEND"}}},
    ]))
    assert docs == [{"_id": 1, "level": 1, "acct_id": "xyz123", "status": "A"}]
    docs = list(db.accounts.aggregate([
        {"$redact": {"$cond": [{"$eq": ["$level", 1]}, "$$KEEP", "$$PRUNE"]}}]))
    assert docs[0]["cc"]["level"] == 5


def test_redact_errors(coll):
    coll.insert_one({"level": 1})
    assert error_code(coll, [{"$redact": "$level"}]) == 17053
    # The system variables exist only inside $redact.
    assert error_code(coll, [{"$project": {"x": "$$KEEP"}}]) == 17276


# --------------------------------------------------------------------------- $graphLookup


EMPLOYEES = [
    {"_id": 1, "name": "Dev"},
    {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
    {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
    {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
    {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
    {"_id": 6, "name": "Dan", "reportsTo": "Andrew"},
]


def test_graph_lookup_reporting_hierarchy(db):
    db.employees.insert_many([dict(d) for d in EMPLOYEES])
    docs = list(db.employees.aggregate([{"$graphLookup": {
        "from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
        "connectToField": "name", "as": "reportingHierarchy"}}]))
    hierarchy = {d["name"]: sorted(h["name"] for h in d["reportingHierarchy"]) for d in docs}
    assert hierarchy == {
        "Dev": [], "Eliot": ["Dev"], "Ron": ["Dev", "Eliot"], "Andrew": ["Dev", "Eliot"],
        "Asya": ["Dev", "Eliot", "Ron"], "Dan": ["Andrew", "Dev", "Eliot"]}


def test_graph_lookup_across_collections_with_depth_and_restriction(db):
    db.airports.insert_many([
        {"_id": 0, "airport": "JFK", "connects": ["BOS", "ORD"]},
        {"_id": 1, "airport": "BOS", "connects": ["JFK", "PWM"]},
        {"_id": 2, "airport": "ORD", "connects": ["JFK"]},
        {"_id": 3, "airport": "PWM", "connects": ["BOS", "LHR"]},
        {"_id": 4, "airport": "LHR", "connects": ["PWM"]},
    ])
    db.travelers.insert_many([
        {"_id": 1, "name": "Dev", "nearestAirport": "JFK"},
        {"_id": 2, "name": "Eliot", "nearestAirport": "JFK"},
        {"_id": 3, "name": "Jeff", "nearestAirport": "BOS"},
    ])
    docs = list(db.travelers.aggregate([{"$graphLookup": {
        "from": "airports", "startWith": "$nearestAirport", "connectFromField": "connects",
        "connectToField": "airport", "maxDepth": 2, "depthField": "numConnections", "as": "destinations"}}]))
    dev = {d["airport"]: d["numConnections"] for d in docs[0]["destinations"]}
    assert dev == {"JFK": 0, "BOS": 1, "ORD": 1, "PWM": 2}
    jeff = {d["airport"]: d["numConnections"] for d in docs[2]["destinations"]}
    assert jeff == {"BOS": 0, "JFK": 1, "PWM": 1, "ORD": 2, "LHR": 2}
    docs = list(db.travelers.aggregate([{"$graphLookup": {
        "from": "airports", "startWith": "$nearestAirport", "connectFromField": "connects",
        "connectToField": "airport", "as": "destinations",
        "restrictSearchWithMatch": {"airport": {"$ne": "PWM"}}}}]))
    assert sorted(d["airport"] for d in docs[2]["destinations"]) == ["BOS", "JFK", "ORD"]


@pytest.mark.parametrize(
    "extra, code",
    [
        ({"maxDepth": -1}, 40101),
        ({"unknown": 1}, 40104),
        ({"connectFromField": 5}, 40103),
    ],
)
def test_graph_lookup_errors(coll, extra, code):
    coll.insert_one({"a": 1})
    spec = {"from": "other", "startWith": "$a", "connectFromField": "a", "connectToField": "b", "as": "c"}
    spec.update(extra)
    assert error_code(coll, [{"$graphLookup": spec}]) == code
    assert error_code(coll, [{"$graphLookup": {"from": "other", "startWith": "$a"}}]) == 40105
