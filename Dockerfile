FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt constraints.txt ./
RUN pip install --no-cache-dir -r requirements.txt -c constraints.txt
COPY . .
# Static files are collected into the image (not the /data volume, which would hide them) under
# content-hashed names with gzip/brotli copies; WhiteNoise serves them from there, cacheable for ever.
# collectstatic needs a key to import settings; the real one comes from the environment at run time.
ENV STATIC_ROOT=/app/staticfiles
RUN SECRET_KEY=build-only DATA_DIR=/tmp/build python manage.py collectstatic --noinput && rm -rf /tmp/build
RUN useradd --create-home --uid 1000 fleet && mkdir -p /data && chown fleet /data
USER fleet
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120"]
