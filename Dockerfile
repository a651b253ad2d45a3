# Rigboard's service image: web (gunicorn), Celery worker and beat share it.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies first, so code changes do not reinstall them. Every runtime
# package ships manylinux wheels (psycopg[binary], numpy, scipy): no compiler.
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .

# Static files are collected into the image with the production storage
# (hashed, compressed names served by WhiteNoise); the key only satisfies
# settings.py's DEBUG=false check and never signs anything.
RUN DEBUG=false SECRET_KEY=collectstatic-only-not-a-secret \
    python manage.py collectstatic --noinput \
    && useradd --system --create-home --uid 10001 rigboard \
    && mkdir -p /var/lib/rigboard/dumps && chown rigboard /var/lib/rigboard/dumps

USER rigboard

EXPOSE 8000
CMD ["gunicorn", "leaderboard.wsgi:application", "--bind=0.0.0.0:8000", "--workers=3", "--worker-class=gthread", "--threads=4"]
