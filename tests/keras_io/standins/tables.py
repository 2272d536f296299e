"""Tabular data sets: the real files' columns, value kinds and text layout, fewer rows, and a
label that the features predict.

Each function returns the text of the file (str). The rows come from a generator seeded by
the data set's name, so every run, on either side, reads the same file.
"""
import datetime

import numpy as np

from .formats import csv_text


def generator(name):
    """numpy's generator for the data set `name` (never numpy's global one)."""
    return np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(name)))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _choice(rng, options, count, p=None):
    return [options[i] for i in rng.choice(len(options), size=count, p=p)]


def titanic(part):
    """`titanic/train.csv` (627 rows) or `eval.csv` (264 rows): survived, sex, age,
    n_siblings_spouses, parch, fare, class, deck, embark_town, alone."""
    count = dict(train=627, eval=264)[part]
    rng = generator('titanic' + part)
    sex = rng.choice(['male', 'female'], size=count, p=[0.65, 0.35])
    klass = rng.choice(['First', 'Second', 'Third'], size=count, p=[0.24, 0.21, 0.55])
    age = np.round(np.clip(rng.normal(29, 13, count), 0.75, 80))
    siblings = rng.choice([0, 1, 2, 3, 4], size=count, p=[0.68, 0.23, 0.04, 0.03, 0.02])
    parch = rng.choice([0, 1, 2, 3], size=count, p=[0.76, 0.13, 0.09, 0.02])
    fare = np.round(np.where(klass == 'First', 60, np.where(klass == 'Second', 20, 9))
                    * rng.lognormal(0, 0.5, count), 4)
    deck = np.where(klass == 'First', rng.choice(list('ABCDE'), size=count),
                    np.where(rng.uniform(size=count) < 0.9, 'unknown',
                             rng.choice(list('DEFG'), size=count)))
    town = rng.choice(['Southampton', 'Cherbourg', 'Queenstown', 'unknown'], size=count,
                      p=[0.72, 0.19, 0.085, 0.005])
    alone = np.where(siblings + parch == 0, 'y', 'n')
    odds = (2.3 * (sex == 'female') - 1.2 + 0.9 * (klass == 'First')
            - 0.8 * (klass == 'Third') - 0.02 * (age - 29))
    survived = (rng.uniform(size=count) < _sigmoid(odds)).astype(int)
    rows = zip(survived, sex, age, siblings, parch, fare, klass, deck, town, alone)
    return csv_text(['survived', 'sex', 'age', 'n_siblings_spouses', 'parch', 'fare',
                     'class', 'deck', 'embark_town', 'alone'], rows)


def abalone():
    """`abalone_train.csv`: 3320 rows, no header; seven measurements and the age."""
    count = 3320
    rng = generator('abalone')
    age = np.clip(np.round(rng.gamma(9, 1.1, count)), 1, 29).astype(int)
    size = np.clip(0.1 + 0.03 * age + rng.normal(0, 0.05, count), 0.075, 0.815)
    rows = []
    for i in range(count):
        s = size[i]
        weight = 4 * s ** 3 * (1 + rng.normal(0, 0.1))
        rows.append(['%.3f' % s, '%.3f' % (0.8 * s), '%.3f' % (0.27 * s), '%.4f' % weight,
                     '%.4f' % (0.43 * weight), '%.4f' % (0.22 * weight),
                     '%.4f' % (0.29 * weight), age[i]])
    return csv_text(None, rows)


def traffic_volume(count=2000):
    """`Metro_Interstate_Traffic_Volume.csv` (hourly from 2012-10-02 09:00): holiday, temp,
    rain_1h, snow_1h, clouds_all, weather_main, weather_description, date_time,
    traffic_volume."""
    rng = generator('traffic_volume')
    weathers = [('Clouds', 'scattered clouds'), ('Clear', 'sky is clear'),
                ('Rain', 'light rain'), ('Mist', 'mist'), ('Snow', 'light snow')]
    start = datetime.datetime(2012, 10, 2, 9)
    rows = []
    for i in range(count):
        when = start + datetime.timedelta(hours=i)
        weather = weathers[rng.choice(len(weathers), p=[0.4, 0.3, 0.15, 0.1, 0.05])]
        rush = 2500 * np.exp(-((when.hour - 8) ** 2) / 8) + 2500 * np.exp(
            -((when.hour - 17) ** 2) / 8)
        volume = int(max(0, 800 + rush - 600 * (when.weekday() >= 5) + rng.normal(0, 300)))
        rows.append(['None' if i % 200 else 'Columbus Day',
                     '%.2f' % (280 + 12 * np.sin(i / 1400) + rng.normal(0, 3)),
                     '%.2f' % (rng.exponential(1) if weather[0] == 'Rain' else 0.0),
                     '0.0', int(rng.integers(0, 100)), weather[0], weather[1],
                     when.strftime('%Y-%m-%d %H:%M:%S'), volume])
    return csv_text(['holiday', 'temp', 'rain_1h', 'snow_1h', 'clouds_all', 'weather_main',
                     'weather_description', 'date_time', 'traffic_volume'], rows)


FONT_NAMES = ('AGENCY', 'ARIAL', 'BAITI', 'COURIER')


def font(name, count=30):
    """One CSV of the UCI fonts archive: font metadata and 400 pixel columns r0c0..r19c19
    (a glyph of 20x20 pixels, 0-255)."""
    rng = generator('font' + name)
    header = ['font', 'fontVariant', 'm_label', 'strength', 'italic', 'orientation', 'm_top',
              'm_left', 'originalH', 'originalW', 'h', 'w']
    header += ['r%dc%d' % (r, c) for r in range(20) for c in range(20)]
    rows = []
    for i in range(count):
        label = int(rng.integers(33, 127))
        glyph = np.zeros((20, 20), dtype=int)
        glyph[rng.integers(0, 20, 60), rng.integers(0, 20, 60)] = rng.integers(1, 256, 60)
        rows.append([name, 'scanned', label, '0.4', int(rng.integers(0, 2)), '0.0',
                     int(rng.integers(20, 60)), int(rng.integers(0, 40)),
                     int(rng.integers(20, 80)), int(rng.integers(10, 60)), 20, 20]
                    + glyph.ravel().tolist())
    return csv_text(header, rows)


def heart(count=150):
    """`heart.csv` (`count` rows, the real file 303: TF's pandas_dataframe tutorial fits it in
    batches of 2, a dozen times): age, sex, cp, trestbps, chol, fbs, restecg, thalach, exang,
    oldpeak, slope, ca, thal ('fixed', 'normal', 'reversible'), target."""
    rng = generator('heart')
    age = rng.integers(29, 78, count)
    sex = rng.integers(0, 2, count)
    cp = rng.choice([0, 1, 2, 3, 4], size=count, p=[0.02, 0.08, 0.16, 0.28, 0.46])
    trestbps = rng.integers(94, 201, count)
    chol = rng.integers(126, 565, count)
    fbs = (rng.uniform(size=count) < 0.15).astype(int)
    restecg = rng.choice([0, 1, 2], size=count, p=[0.49, 0.02, 0.49])
    thalach = rng.integers(71, 203, count)
    exang = rng.integers(0, 2, count)
    oldpeak = np.round(rng.exponential(1.0, count), 1)
    slope = rng.choice([1, 2, 3], size=count, p=[0.47, 0.46, 0.07])
    ca = rng.choice([0, 1, 2, 3], size=count, p=[0.59, 0.21, 0.13, 0.07])
    thal = rng.choice(['normal', 'fixed', 'reversible'], size=count, p=[0.55, 0.06, 0.39])
    odds = (0.8 * (cp == 4) + 1.2 * exang + 0.7 * oldpeak + 0.8 * ca
            + 1.0 * (thal == 'reversible') - 0.02 * (thalach - 150) - 2.0)
    target = (rng.uniform(size=count) < _sigmoid(odds)).astype(int)
    rows = zip(age, sex, cp, trestbps, chol, fbs, restecg, thalach, exang, oldpeak, slope, ca,
               thal, target)
    return csv_text(['age', 'sex', 'cp', 'trestbps', 'chol', 'fbs', 'restecg', 'thalach',
                     'exang', 'oldpeak', 'slope', 'ca', 'thal', 'target'], rows)


def petfinder(count=2000):
    """`petfinder-mini.csv`: Type, Age, Breed1, Gender, Color1, Color2, MaturitySize,
    FurLength, Vaccinated, Sterilized, Health, Fee, Description, PhotoAmt, AdoptionSpeed
    (0-4, 4: not adopted)."""
    rng = generator('petfinder')
    kind = rng.choice(['Cat', 'Dog'], size=count)
    age = rng.choice([1, 2, 3, 4, 6, 12, 24, 36, 60], size=count)
    breeds = ['Mixed Breed', 'Domestic Short Hair', 'Tabby', 'Poodle', 'Terrier', 'Persian']
    colors = ['Black', 'Brown', 'Golden', 'Yellow', 'Cream', 'Gray', 'White']
    words = ['friendly', 'playful', 'healthy', 'cute', 'rescued', 'vaccinated', 'loving',
             'shy', 'active', 'gentle', 'kitten', 'puppy', 'home', 'adopt', 'please']
    vaccinated = rng.choice(['Yes', 'No', 'Not Sure'], size=count, p=[0.4, 0.45, 0.15])
    photos = rng.integers(0, 10, count)
    fee = np.where(rng.uniform(size=count) < 0.8, 0, rng.integers(1, 500, count))
    score = 0.4 * (photos - 4) - 0.03 * (age - 12) + 0.8 * (vaccinated == 'Yes')
    adopted = rng.uniform(size=count) < _sigmoid(score + 1.0)
    speed = np.where(adopted, rng.integers(0, 4, count), 4)
    rows = []
    for i in range(count):
        rows.append([kind[i], age[i], breeds[rng.integers(len(breeds))],
                     ['Male', 'Female'][rng.integers(2)], colors[rng.integers(len(colors))],
                     ['No Color', 'White', 'Brown'][rng.integers(3)],
                     ['Small', 'Medium', 'Large'][rng.integers(3)],
                     ['Short', 'Medium', 'Long'][rng.integers(3)], vaccinated[i],
                     ['Yes', 'No', 'Not Sure'][rng.integers(3)],
                     ['Healthy', 'Minor Injury'][int(rng.uniform() < 0.05)], fee[i],
                     ' '.join(_choice(rng, words, int(rng.integers(3, 12)))), photos[i],
                     speed[i]])
    return csv_text(['Type', 'Age', 'Breed1', 'Gender', 'Color1', 'Color2', 'MaturitySize',
                     'FurLength', 'Vaccinated', 'Sterilized', 'Health', 'Fee', 'Description',
                     'PhotoAmt', 'AdoptionSpeed'], rows)


def creditcard(count=10000, positives=100):
    """`creditcard.csv`: Time, V1..V28 (PCA features), Amount, Class (1: fraud, rare)."""
    rng = generator('creditcard')
    labels = np.zeros(count, dtype=int)
    labels[rng.choice(count, positives, replace=False)] = 1
    features = rng.normal(0, 1, (count, 28))
    shift = rng.normal(0, 2.5, 28) * (rng.uniform(size=28) < 0.4)
    features += labels[:, None] * shift
    time = np.sort(rng.uniform(0, 172792, count)).round()
    amount = np.round(rng.lognormal(3, 1.5, count), 2)
    rows = [['%.1f' % time[i]] + ['%.6f' % v for v in features[i]] + ['%.2f' % amount[i],
                                                                      labels[i]]
            for i in range(count)]
    return csv_text(['Time'] + ['V%d' % i for i in range(1, 29)] + ['Amount', 'Class'],
                    rows)


JENA_COLUMNS = ['Date Time', 'p (mbar)', 'T (degC)', 'Tpot (K)', 'Tdew (degC)', 'rh (%)',
                'VPmax (mbar)', 'VPact (mbar)', 'VPdef (mbar)', 'sh (g/kg)',
                'H2OC (mmol/mol)', 'rho (g/m**3)', 'wv (m/s)', 'max. wv (m/s)', 'wd (deg)']


def jena_climate(days=30):
    """`jena_climate_2009_2016.csv`: a record every 10 minutes from 01.01.2009 00:10:00, the
    14 weather measurements, a daily and a yearly cycle in the temperature, and a few
    missing wind speeds recorded as -9999."""
    rng = generator('jena_climate')
    count = days * 144
    step = np.arange(count)
    start = datetime.datetime(2009, 1, 1, 0, 10)
    day = np.sin(2 * np.pi * step / 144 - np.pi / 2)
    year = np.sin(2 * np.pi * step / (144 * 365.25) - np.pi / 2)
    weather = np.cumsum(rng.normal(0, 0.08, count))
    weather -= np.convolve(weather, np.ones(1441) / 1441, mode='same')
    temperature = 9 + 10 * year + 4 * day + 3 * weather + rng.normal(0, 0.3, count)
    pressure = 989 + 6 * np.sin(step / 900) + rng.normal(0, 0.5, count)
    humidity = np.clip(76 - 2.5 * day * 4 - 2 * weather + rng.normal(0, 3, count), 15, 100)
    saturation = 6.1 * np.exp(17.6 * temperature / (temperature + 243))
    vapour = saturation * humidity / 100
    dew = 243 * np.log(vapour / 6.1) / (17.6 - np.log(vapour / 6.1))
    wind = np.abs(2 + rng.normal(0, 1.2, count))
    gust = wind * 1.6 + np.abs(rng.normal(0, 0.5, count))
    wind[rng.choice(count, 3, replace=False)] = -9999.0
    direction = np.mod(180 + 90 * np.sin(step / 300) + rng.normal(0, 30, count), 360)
    rows = []
    for i in range(count):
        when = start + datetime.timedelta(minutes=10 * i)
        t, p = temperature[i], pressure[i]
        rows.append([when.strftime('%d.%m.%Y %H:%M:%S'), '%.2f' % p, '%.2f' % t,
                     '%.2f' % (t + 273.15 + (1000 - p) * 0.08), '%.2f' % dew[i],
                     '%.1f' % humidity[i], '%.2f' % saturation[i], '%.2f' % vapour[i],
                     '%.2f' % (saturation[i] - vapour[i]), '%.2f' % (622 * vapour[i] / p),
                     '%.2f' % (1000 * vapour[i] / p), '%.2f' % (348.4 * p / (t + 273.15)),
                     '%.2f' % wind[i], '%.2f' % gust[i], '%.1f' % direction[i]])
    return csv_text(JENA_COLUMNS, rows)


def auto_mpg():
    """`auto-mpg.data` (398 cars): space-separated MPG, Cylinders, Displacement, Horsepower
    ('?' for six), Weight, Acceleration, Model Year, Origin, then a tab and the quoted car
    name."""
    count = 398
    rng = generator('auto_mpg')
    cylinders = rng.choice([4, 6, 8], size=count, p=[0.52, 0.21, 0.27])
    displacement = cylinders * rng.uniform(20, 45, count)
    horsepower = 20 + 0.4 * displacement + rng.normal(0, 10, count)
    weight = 1200 + 8 * displacement + rng.normal(0, 200, count)
    year = rng.integers(70, 83, count)
    origin = np.where(cylinders == 8, 1, rng.choice([1, 2, 3], size=count))
    mpg = np.clip(55 - 0.0075 * weight + 0.5 * (year - 76) - 0.03 * horsepower
                  + rng.normal(0, 2, count), 9, 46.6)
    acceleration = np.clip(22 - 0.04 * horsepower + rng.normal(0, 1.5, count), 8, 24.8)
    missing = set(rng.choice(count, 6, replace=False).tolist())
    lines = []
    for i in range(count):
        power = '?' if i in missing else '%.1f' % horsepower[i]
        lines.append('%.1f   %d   %.1f      %s      %d.      %.1f   %d  %d\t"car %d"' % (
            mpg[i], cylinders[i], displacement[i], power, weight[i], acceleration[i], year[i],
            origin[i], i))
    return '\n'.join(lines) + '\n'


def wdbc():
    """`wdbc.data` (569 rows, no header): id, diagnosis (M or B), 30 cell measurements."""
    count = 569
    rng = generator('wdbc')
    malignant = rng.uniform(size=count) < 0.37
    scale = np.exp(rng.normal(0, 1.5, 30))
    values = scale * (1 + 0.15 * rng.normal(0, 1, (count, 30))
                      + 0.35 * malignant[:, None] * (rng.uniform(size=30) < 0.7))
    rows = [[842302 + 97 * i, 'M' if malignant[i] else 'B'] + ['%.5g' % v for v in values[i]]
            for i in range(count)]
    return csv_text(None, rows)


def ecg(count=1000):
    """`ecg.csv` (no header): 140 readings of a heartbeat, then the label (1: normal,
    0: anomalous)."""
    rng = generator('ecg')
    normal = rng.uniform(size=count) < 0.58
    t = np.linspace(0, 1, 140)
    beat = -2 * np.exp(-((t - 0.15) / 0.03) ** 2) + 1.5 * np.exp(-((t - 0.5) / 0.15) ** 2)
    odd = 1.5 * np.exp(-((t - 0.75) / 0.05) ** 2) - 1.0 * np.exp(-((t - 0.35) / 0.1) ** 2)
    signals = beat + (~normal)[:, None] * odd + rng.normal(0, 0.25, (count, 140))
    rows = [['%.7f' % v for v in signals[i]] + ['%.1f' % normal[i]] for i in range(count)]
    return csv_text(None, rows)



def forda(part):
    """`FordA_TRAIN.tsv` (400 rows) or `FordA_TEST.tsv` (200): tab-separated, the label (-1 or
    1) then 500 readings of engine noise; class 1 hums at a frequency of its own."""
    count = dict(TRAIN=400, TEST=200)[part]
    rng = generator('forda' + part)
    labels = rng.choice([-1, 1], size=count)
    t = np.arange(500)
    pitch = np.where(labels == 1, 0.11, 0.05)[:, None] * rng.uniform(0.9, 1.1, (count, 1))
    values = np.sin(2 * np.pi * pitch * t + rng.uniform(0, 6.3, (count, 1)))
    values += rng.normal(0, 0.6, (count, 500))
    values = (values - values.mean(axis=1, keepdims=True)) / values.std(axis=1, keepdims=True)
    rows = [['%.7e' % labels[i]] + ['%.7e' % v for v in values[i]] for i in range(count)]
    return csv_text(None, rows, delimiter='\t')


def nab_daily(with_jump):
    """`art_daily_small_noise.csv` or `art_daily_jumpsup.csv` of the Numenta Anomaly
    Benchmark: 4032 readings every 5 minutes from 2014-04-01 (timestamp, value), a daily
    cycle with noise; the second with a day of raised values."""
    rng = generator('nab%d' % with_jump)
    count = 4032
    start = datetime.datetime(2014, 4, 1)
    step = np.arange(count)
    phase = (step % 288) / 288
    values = 20 + 60 * ((phase > 0.25) & (phase < 0.75)) + rng.normal(0, 2, count)
    if with_jump:
        values[3000:3288] += 60 * ((phase[3000:3288] > 0.25) & (phase[3000:3288] < 0.75))
    rows = [[(start + datetime.timedelta(minutes=5 * i)).strftime('%Y-%m-%d %H:%M:%S'),
             '%.10f' % values[i]] for i in range(count)]
    return csv_text(['timestamp', 'value'], rows)


def movielens_small(users=100, movies=300, ratings=5000):
    """`ml-latest-small.zip`'s files: ml-latest-small/{ratings,movies,tags,links}.csv and
    README.txt; each user likes the movies of one genre more."""
    rng = generator('movielens')
    genres = ['Action', 'Comedy', 'Drama', 'Romance', 'Thriller', 'Animation']
    movie_ids = np.sort(rng.choice(np.arange(1, 5 * movies), movies, replace=False))
    movie_genre = rng.integers(0, len(genres), movies)
    taste = rng.integers(0, len(genres), users)
    pairs = set()
    while len(pairs) < ratings:
        pairs.add((int(rng.integers(0, users)), int(rng.integers(0, movies))))
    rows = []
    for user, movie in sorted(pairs):
        score = 3 + 1.5 * (movie_genre[movie] == taste[user]) + rng.normal(0, 0.7)
        rating = np.clip(round(score * 2) / 2, 0.5, 5)
        rows.append([user + 1, movie_ids[movie], '%.1f' % rating,
                     964982703 + int(rng.integers(0, 10 ** 7))])
    return {
        'ml-latest-small/ratings.csv': csv_text(['userId', 'movieId', 'rating', 'timestamp'],
                                                rows),
        'ml-latest-small/movies.csv': csv_text(
            ['movieId', 'title', 'genres'],
            [[m, 'Movie %d (%d)' % (m, 1990 + m % 30), genres[g]]
             for m, g in zip(movie_ids, movie_genre)]),
        'ml-latest-small/tags.csv': csv_text(['userId', 'movieId', 'tag', 'timestamp'], []),
        'ml-latest-small/links.csv': csv_text(['movieId', 'imdbId', 'tmdbId'],
                                              [[m, 100000 + m, 800 + m] for m in movie_ids]),
        'ml-latest-small/README.txt': 'Stand-in for MovieLens ml-latest-small.\n'}


def arxiv(count=2000):
    """`arxiv_data.csv`: titles, summaries, terms (a Python list of arXiv categories as text);
    a few duplicated rows, as the real file has, and words in the summaries that tell the
    terms."""
    rng = generator('arxiv')
    term_sets = [['cs.LG'], ['cs.CV'], ['cs.LG', 'stat.ML'], ['cs.CV', 'cs.LG'], ['cs.CL'],
                 ['cs.CL', 'cs.LG'], ['stat.ML'], ['cs.AI', 'cs.LG']]
    topic_words = {'cs.LG': 'learning gradient training loss', 'cs.CV': 'image pixels vision '
                   'segmentation', 'stat.ML': 'bayesian inference variance prior',
                   'cs.CL': 'language text translation tokens', 'cs.AI': 'agent planning '
                   'reasoning search'}
    common = 'we propose a novel method that results show our model on the data'.split()
    rows = []
    for i in range(count):
        terms = term_sets[int(rng.integers(len(term_sets)))]
        vocabulary = common + ' '.join(topic_words[t] for t in terms).split()
        summary = ' '.join(rng.choice(vocabulary, int(rng.integers(30, 80))))
        rows.append(['Paper %d on %s' % (i, ' and '.join(terms)), summary.capitalize() + '.',
                     repr(terms)])
    rows += rows[:count // 20]
    return csv_text(['titles', 'summaries', 'terms'], rows)
